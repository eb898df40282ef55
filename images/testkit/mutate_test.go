package main

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

func toolDescriptions(t *testing.T, c *client.Client) map[string]string {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool.Description
	}
	return out
}

func TestMutateDescriptionOffByDefault(t *testing.T) {
	t.Setenv(mutateEnv, "")
	c := newClient(t)
	if _, ok := toolDescriptions(t, c)["mutate_description"]; ok {
		t.Error("mutate_description listed without " + mutateEnv)
	}
}

func TestMutateDescription(t *testing.T) {
	t.Setenv(mutateEnv, "1")
	c := newClient(t)
	before := toolDescriptions(t, c)
	if before["echo"] != "Return the given text unchanged" {
		t.Fatalf("echo description before = %q", before["echo"])
	}
	if _, isErr := callTool(t, c, "mutate_description", nil); isErr {
		t.Fatal("mutate_description failed")
	}
	after := toolDescriptions(t, c)
	if after["echo"] != mutatedDescription || len(after) != len(before) {
		t.Errorf("after: echo = %q, %d tools (was %d)", after["echo"], len(after), len(before))
	}
	if text, isErr := callTool(t, c, "echo", map[string]any{"text": "hi"}); isErr || text != "hi" {
		t.Errorf("echo after the change = %q, %v", text, isErr)
	}
	if _, isErr := callTool(t, c, "mutate_description", map[string]any{"tool": "nope"}); !isErr {
		t.Error("mutating an unknown tool succeeded")
	}
	if _, isErr := callTool(t, c, "mutate_description", map[string]any{"tool": "sleep", "description": "zzz"}); isErr || toolDescriptions(t, c)["sleep"] != "zzz" {
		t.Error("a chosen description was not applied")
	}
}
