package main

import (
	"os"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestLoadArgsFromSchema(t *testing.T) {
	tool := mcp.NewTool("hangar_load",
		mcp.WithString("name", mcp.Required()),
		mcp.WithString("image"),
		mcp.WithBoolean("force_unverified"),
	)
	args, err := loadArgs(tool, "load-x-00", mathImage)
	if err != nil {
		t.Fatal(err)
	}
	if args["name"] != "load-x-00" || args["image"] != mathImage || len(args) != 2 {
		t.Fatalf("args = %v", args)
	}
	if k := argKeyOf(args); k != "name" {
		t.Fatalf("argKeyOf = %q", k)
	}

	unknown := mcp.NewTool("hangar_load", mcp.WithString("registry_ref", mcp.Required()))
	if _, err := loadArgs(unknown, "n", mathImage); err == nil {
		t.Fatal("an unknown required argument was accepted")
	}
}

func TestProcReaders(t *testing.T) {
	rss, err := readRSS(os.Getpid())
	if err != nil || rss <= 0 {
		t.Fatalf("readRSS = %d, %v", rss, err)
	}
	if _, err := readCPU(os.Getpid()); err != nil {
		t.Fatalf("readCPU: %v", err)
	}
}
