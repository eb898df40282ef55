package readmodel_test

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/catalog"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/policy"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/store"
)

// TestDetailsRules: a server's view holds its own policy and whether it
// narrows (an install) or adds to the gateway's (the config file); the
// deciding rule of each call is in its audit entries.
func TestDetailsRules(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := provider.NewManager(nil, provider.Options{Log: log})
	g := gateway.New(config.Default(), mgr, nil, nil, log)
	own := &policy.Spec{Default: policy.Deny, Rules: []policy.Rule{{Name: "oncall", Effect: policy.Allow, When: `"oncall" in identity.groups`}}}
	g.Catalog.Publish(t.Context(), catalog.SourceConfig, []*config.Server{
		{ID: "db", Mode: config.ModeRemote, Endpoint: "http://127.0.0.1:1/mcp", Policy: own},
		{ID: "plain", Mode: config.ModeRemote, Endpoint: "http://127.0.0.1:2/mcp"},
	}, "test")
	g.Catalog.Publish(t.Context(), catalog.SourceInstalled, []*config.Server{
		{ID: "inst", Mode: config.ModeRemote, Endpoint: "http://127.0.0.1:3/mcp", Policy: own},
	}, "test")
	st := &fakeStore{audit: map[string][]store.AuditEntry{"db": {{Action: "front_door", Tool: "drop", Allowed: false, Rule: "no-drops"}}}}
	m := &readmodel.Model{Providers: mgr, Groups: g.Groups, Catalog: g.Catalog, Audit: st, Log: log,
		Policy: func() readmodel.Rules {
			return readmodel.Rules{Default: policy.Allow, Rules: []policy.Rule{{Name: "no-drops", Effect: policy.Deny, When: "true"}}}
		}}

	d := m.Details(t.Context(), "db", 10)
	if d.Rules == nil || d.Rules.Narrows || d.Rules.Default != policy.Deny || len(d.Rules.Rules) != 1 || d.Rules.Rules[0].Name != "oncall" {
		t.Errorf("db's rules %+v", d.Rules)
	}
	if len(d.Audit) != 1 || d.Audit[0].Rule != "no-drops" {
		t.Errorf("db's audit %+v", d.Audit)
	}
	if d := m.Details(t.Context(), "inst", 10); d.Rules == nil || !d.Rules.Narrows {
		t.Errorf("inst's rules %+v", d.Rules)
	}
	if d := m.Details(t.Context(), "plain", 10); d.Rules != nil {
		t.Errorf("plain's rules %+v", d.Rules)
	}
	if r := m.GatewayRules(); r == nil || r.Default != policy.Allow || len(r.Rules) != 1 || r.Rules[0].Name != "no-drops" {
		t.Errorf("the gateway's rules %+v", r)
	}
	if r := (&readmodel.Model{}).GatewayRules(); r != nil {
		t.Errorf("rules without a source: %+v", r)
	}

	// The servers' own policies, in the catalog's order, of the servers
	// the caller may reach.
	var got []string
	for _, r := range m.OwnRules(nil) {
		got = append(got, fmt.Sprintf("%s:%v:%s:%d", r.Server, r.Policy.Narrows, r.Policy.Default, len(r.Policy.Rules)))
	}
	if strings.Join(got, " ") != "db:false:deny:1 inst:true:deny:1" {
		t.Errorf("own rules %v", got)
	}
	if r := m.OwnRules(func(id string) bool { return id != "db" }); len(r) != 1 || r[0].Server != "inst" {
		t.Errorf("own rules of the servers but db: %+v", r)
	}
}
