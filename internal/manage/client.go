package manage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
)

// Client calls the management methods of a running gateway (the hangar
// servers and hangar import commands).
type Client struct {
	URL   string // the gateway's /mcp endpoint
	Token string // bearer token; "" sends none
	HTTP  *http.Client
}

// Call runs method with params and decodes the result into out.
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", method, err)
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	if env.Error != nil {
		return fmt.Errorf("%s: %s (code %d)", method, env.Error.Message, env.Error.Code)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Result, out)
}

// ErrNotAllInstalled is returned after an install that left some servers
// out; their diagnostics have been printed.
var ErrNotAllInstalled = errors.New("not every server was installed")

// InstallFile installs a client config file (Claude Desktop, Cursor, VS
// Code) and prints one row per server and diagnostic.
func (c *Client) InstallFile(ctx context.Context, data []byte, params map[string]any, w io.Writer) error {
	if params == nil {
		params = map[string]any{}
	}
	params["config_json"] = string(data)
	var res InstallResult
	if err := c.Call(ctx, MethodInstall, params, &res); err != nil {
		return err
	}
	PrintInstall(w, &res)
	if res.Status != "ok" {
		return fmt.Errorf("%w (status %s)", ErrNotAllInstalled, res.Status)
	}
	return nil
}

// PrintInstall writes an install result as a table: a row per diagnostic,
// or one row for a server without any.
func PrintInstall(w io.Writer, res *InstallResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATUS\tLEVEL\tCODE\tFIELD\tMESSAGE")
	for _, s := range res.Servers {
		if len(s.Diagnostics) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\n", s.Name, s.Status)
			continue
		}
		for _, d := range s.Diagnostics {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Status, d.Level, d.Code, d.FieldPath, d.Message)
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "status: %s\n", res.Status)
}

// PrintList writes mcp/list as a table.
func PrintList(w io.Writer, res *ListResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tSTATE\tSTATUS\tENABLED\tIMPLICIT\tTOOLS\tTRANSPORT")
	for _, it := range res.Servers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%v\t%d\t%v\n", it.Name, it.SourceKind, it.Runtime.State, it.Status,
			it.Policy.Enabled, it.Policy.AllowImplicitInvocation, it.ToolsCount, it.Transport["kind"])
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "snapshot_version: %d\n", res.SnapshotVersion)
}

// PrintJSON writes v as indented JSON.
func PrintJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
