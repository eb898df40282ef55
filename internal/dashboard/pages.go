package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/readmodel"
)

// The pages table. Each page is a route of the shell (#name) and the parts
// it shows, in order; the shell renders the nav and hands the table to
// app.js, which fetches each part and keeps it current. A page not in the
// nav (Nav "") is reached by links: the server page, #server/ID, whose
// parts name the server as {id}.

// Live kinds of a part: when app.js fetches it again.
const (
	liveEvents  = "events"  // when /events reports a change
	liveTraffic = "traffic" // every traffic step
	liveLog     = "log"     // not fetched: the server's log, fed by /events?follow=ID
)

// part is one fragment of a page.
type part struct {
	Title string `json:"title"`
	// Frag is the fragment's path under /ui/api/.
	Frag string `json:"frag"`
	// Live lists when it is fetched again (live* kinds, space separated).
	Live string `json:"live"`
}

// page is one route of the shell.
type page struct {
	Name  string `json:"name"`
	Nav   string `json:"-"`
	Parts []part `json:"parts"`
}

var pages = []page{
	{Name: "servers", Nav: "Servers", Parts: []part{
		{"Traffic", "traffic", liveTraffic},
		{"Waiting for approval", "pending?compact=1", liveEvents},
		{"Servers", "servers", liveEvents + " " + liveTraffic}}},
	{Name: "groups", Nav: "Groups", Parts: []part{{"Groups", "groups", liveEvents}}},
	{Name: "replicas", Nav: "Replicas", Parts: []part{{"Replicas and their containers", "replicas", liveEvents}}},
	{Name: "gateway", Nav: "Gateway tools", Parts: []part{{"The gateway's own tools", "gateway", ""}}},
	{Name: "pending", Nav: "Pending", Parts: []part{{"Pending discoveries and quarantine", "pending", liveEvents}}},
	{Name: "installs", Nav: "Installs", Parts: []part{{"Installed servers", "installs", liveEvents}}},
	{Name: "policy", Nav: "Policy", Parts: []part{{"Policy over calls", "policy", liveEvents}}},
	{Name: "refusals", Nav: "Refusals", Parts: []part{{"Recent refusals", "refusals", liveEvents}}},
	{Name: "server", Parts: []part{
		{"", "server/{id}?part=head", liveEvents},
		{"Traffic", "traffic/{id}", liveTraffic},
		{"", "server/{id}?part=body", liveEvents},
		{"Live log", "", liveLog}}},
}

// fragment is one data route under /ui/api/, read with hangar:read.
type fragment struct {
	path  string
	serve http.HandlerFunc
}

func (d *Dashboard) fragments() []fragment {
	return []fragment{
		{"me", d.me},
		{"servers", d.servers},
		{"server/{id}", d.server},
		{"traffic", d.trafficAll},
		{"traffic/{id}", d.trafficOne},
		{"groups", d.groups},
		{"replicas", d.replicas},
		{"gateway", d.gateway},
		{"pending", d.pending},
		{"installs", d.installs},
		{"refusals", d.refusals},
		{"policy", d.policy},
		{"try", d.try},
		{"tools", d.toolFilter},
	}
}

// me is who the caller is, for the header: name, kind, scopes and
// servers, whether a credential was presented, what the header's search
// box calls, the traffic step.
func (d *Dashboard) me(w http.ResponseWriter, r *http.Request) {
	id := auth.Caller(r.Context())
	search := false
	for _, t := range d.views.GatewayTools() {
		search = search || t.Name == findTool
	}
	servers := id.Servers
	if servers == nil {
		servers = []string{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"name": id.Name, "kind": id.Kind, "scopes": id.Scopes, "servers": servers,
		"search": search, "step_ms": d.views.TrafficStepOf().Milliseconds(),
	})
}

// serverRow is one row of the server list: its summary and its traffic.
type serverRow struct {
	readmodel.Summary
	CallsSpark, LatencySpark sparkline
}

func (d *Dashboard) servers(w http.ResponseWriter, r *http.Request) {
	list := d.views.Servers(keep(r.Context()))
	now := time.Now()
	rows := make([]serverRow, len(list))
	for i, s := range list {
		t := d.views.Traffic(s.ID)
		rows[i] = serverRow{Summary: s,
			CallsSpark: spark(t, now, "calls", "/s", func(p readmodel.TrafficPoint) (float64, bool) { return t.PerSecond(p.Calls), true }),
			LatencySpark: spark(t, now, "p99", " ms", func(p readmodel.TrafficPoint) (float64, bool) {
				return p.P99Ms, p.Calls > 0
			})}
	}
	d.render(w, serversFragment(rows))
}

func (d *Dashboard) trafficAll(w http.ResponseWriter, r *http.Request) {
	d.render(w, trafficFragment(trafficCharts("", d.views.TrafficOf(keep(r.Context())), d.views.TrafficStepOf(), time.Now(), false)))
}

func (d *Dashboard) trafficOne(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var t *readmodel.Traffic
	if keep(r.Context())(id) {
		t = d.views.Traffic(id) // else drawn empty, as for a server never called
	}
	d.render(w, trafficFragment(trafficCharts(id, t, d.views.TrafficStepOf(), time.Now(), true)))
}

func (d *Dashboard) groups(w http.ResponseWriter, r *http.Request) {
	d.render(w, groupsFragment(d.views.GroupList(keep(r.Context()))))
}

func (d *Dashboard) replicas(w http.ResponseWriter, r *http.Request) {
	d.render(w, replicasFragment(d.views.Replicas(r.Context(), keep(r.Context()))))
}

// gatewayTool is one of the gateway's own tools as its page lists it.
type gatewayTool struct {
	Name, Description, Scope string
	Allowed                  bool
}

func (d *Dashboard) gateway(w http.ResponseWriter, r *http.Request) {
	id := auth.Caller(r.Context())
	var out []gatewayTool
	for _, t := range d.views.GatewayTools() {
		s := auth.ToolScope(t.Name)
		out = append(out, gatewayTool{Name: t.Name, Description: t.Description, Scope: s, Allowed: id.Has(s)})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	d.render(w, gatewayFragment(out))
}

// toolMatch is one tool the header's filter found.
type toolMatch struct {
	Name        string `json:"name"`
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Description string `json:"description"`
}

// findTool is the tool the header's search box calls when the gateway
// has it (frontdoor.FindToolName, in search mode).
const findTool = "hangar_find_tools"

// maxMatches bounds the header filter's answer.
const maxMatches = 20

// toolFilter is the header's box on a gateway without a search index
// (front_door.discovery: list): the tools of the caller's servers whose
// name or description holds every word of ?q, as JSON. With an index the
// box calls hangar_find_tools instead.
func (d *Dashboard) toolFilter(w http.ResponseWriter, r *http.Request) {
	words := strings.Fields(strings.ToLower(r.URL.Query().Get("q")))
	out := []toolMatch{}
	for _, s := range d.views.Servers(keep(r.Context())) {
		if len(words) == 0 || len(out) >= maxMatches {
			break
		}
		det := d.views.Details(r.Context(), s.ID, 0)
		for _, t := range det.CatalogTools() {
			text := strings.ToLower(t.Name + " " + det.ToolNames[t.Name] + " " + t.Description)
			if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(text, w) }) && len(out) < maxMatches {
				out = append(out, toolMatch{Name: det.ToolNames[t.Name], Server: s.ID, Tool: t.Name, Description: t.Description})
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"matches": out})
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
	list := d.views.Candidates(r.Context(), keep(r.Context()))
	if len(list) == 0 && r.URL.Query().Get("compact") != "" {
		return // nothing: the part is not shown
	}
	sort.SliceStable(list, func(a, b int) bool { return list[a].Name < list[b].Name })
	d.render(w, pendingFragment(pendingPage{Candidates: list, CanAct: d.tools != nil, CanReject: d.canReject()}))
}

func (d *Dashboard) installs(w http.ResponseWriter, r *http.Request) {
	list, err := d.views.InstalledServers(r.Context(), keep(r.Context()))
	if err != nil {
		d.log.Warn("installs not read", "error", err)
		http.Error(w, "installs not read", http.StatusInternalServerError)
		return
	}
	d.render(w, installsFragment(list))
}

func (d *Dashboard) refusals(w http.ResponseWriter, r *http.Request) {
	list, err := d.views.Refusals(r.Context(), keep(r.Context()), History)
	if err != nil {
		d.log.Warn("refusals not read", "error", err)
		http.Error(w, "refusals not read", http.StatusInternalServerError)
		return
	}
	d.render(w, refusalsFragment(list))
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
	status := http.StatusOK
	if !out.OK {
		status = http.StatusConflict
	}
	d.send(w, status, actionFragment(out))
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
