package dashboard

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/readmodel"
)

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"rate": func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"ms": func(f float64) string {
		if f == 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f", f)
	},
	"short": func(s string) string {
		if len(s) > 19 && strings.HasPrefix(s, "sha256:") {
			return s[:19]
		}
		return s
	},
	"raw": func(b json.RawMessage) string { return string(b) },
	"json": func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	},
}

func (d *Dashboard) servers(w http.ResponseWriter, r *http.Request) {
	d.render(w, "servers", d.views.Servers(keep(r.Context())))
}

// serverPage is the server page's data.
type serverPage struct {
	*readmodel.Details
	// Callable maps a tool's name to the front door's callable name.
	Callable map[string]string
	Tools    []toolRow
	// CanApprove and CanReject offer the actions the server's state
	// allows (readmodel decides) and the dashboard can run.
	CanApprove, CanReject bool
}

type toolRow struct {
	Name, Callable, Description string
}

func (d *Dashboard) server(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !keep(r.Context())(id) {
		// Out of the caller's servers: as if it did not exist.
		d.render(w, "unknown", id)
		return
	}
	det := d.views.Details(r.Context(), id, History)
	if !det.Served() {
		d.render(w, "unknown", id)
		return
	}
	page := serverPage{Details: det, Callable: map[string]string{},
		CanApprove: d.tools != nil && det.Approvable(), CanReject: d.canReject() && det.Rejectable()}
	for _, b := range det.Bindings {
		page.Callable[b.RawToolName] = b.CallableName
	}
	for _, t := range det.CatalogTools() {
		page.Tools = append(page.Tools, toolRow{Name: t.Name, Callable: page.Callable[t.Name], Description: t.Description})
	}
	d.render(w, "server", page)
}

// pendingPage is the pending page's data. A row offers the actions its
// candidate's state allows (Candidate.Approvable, Rejectable) among those
// the dashboard can run (CanAct, CanReject).
type pendingPage struct {
	Candidates []readmodel.Candidate
	CanAct     bool
	CanReject  bool
}

func (d *Dashboard) pending(w http.ResponseWriter, r *http.Request) {
	list := d.views.Candidates(keep(r.Context()))
	sort.SliceStable(list, func(a, b int) bool { return list[a].Name < list[b].Name })
	d.render(w, "pending", pendingPage{Candidates: list, CanAct: d.tools != nil, CanReject: d.canReject()})
}

func (d *Dashboard) installs(w http.ResponseWriter, r *http.Request) {
	list, err := d.views.InstalledServers(r.Context(), keep(r.Context()))
	if err != nil {
		d.log.Warn("installs not read", "error", err)
		http.Error(w, "installs not read", http.StatusInternalServerError)
		return
	}
	d.render(w, "installs", list)
}

func (d *Dashboard) refusals(w http.ResponseWriter, r *http.Request) {
	list, err := d.views.Refusals(r.Context(), keep(r.Context()), History)
	if err != nil {
		d.log.Warn("refusals not read", "error", err)
		http.Error(w, "refusals not read", http.StatusInternalServerError)
		return
	}
	d.render(w, "refusals", list)
}

// actionResult is an action's answer, shown as a notice.
type actionResult struct {
	OK      bool
	Server  string
	Message string
}

// approve calls hangar_approve for the server: the tool's own
// authorization, its audit entry and its answer.
func (d *Dashboard) approve(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if d.tools == nil {
		http.Error(w, "actions are not available", http.StatusNotImplemented)
		return
	}
	res, err := d.callTool(r, "hangar_approve", map[string]any{"mcp_server": id})
	out := actionResult{Server: id}
	switch {
	case err != nil:
		out.Message = err.Error()
	case res.IsError:
		out.Message = textOf(res)
	default:
		var ans struct {
			Approved bool   `json:"approved"`
			Status   string `json:"status"`
			Error    string `json:"error"`
		}
		_ = json.Unmarshal([]byte(textOf(res)), &ans)
		out.OK, out.Message = ans.Approved, ans.Error
		if ans.Approved {
			out.Message = "approved: " + ans.Status
		}
	}
	if !out.OK {
		w.WriteHeader(http.StatusConflict)
	}
	d.render(w, "action", out)
}

// callTool runs one tools/call through the MCP server with the request's
// identity.
func (d *Dashboard) callTool(r *http.Request, name string, args map[string]any) (*mcp.CallToolResult, error) {
	msg, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args},
	})
	if err != nil {
		return nil, err
	}
	switch resp := d.tools.HandleMessage(r.Context(), msg).(type) {
	case mcp.JSONRPCResponse:
		b, err := json.Marshal(resp.Result)
		if err != nil {
			return nil, err
		}
		return mcp.ParseCallToolResult((*json.RawMessage)(&b))
	case mcp.JSONRPCError:
		return nil, fmt.Errorf("%s (%d)", resp.Error.Message, resp.Error.Code)
	default:
		return nil, fmt.Errorf("unexpected answer %T", resp)
	}
}

func textOf(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}
