package dockerrt

import (
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/egress"
)

func TestEventLines(t *testing.T) {
	t.Parallel()
	var got []egress.Event
	w := &eventLines{on: func(e egress.Event) { got = append(got, e) }}
	writes := []string{
		`{"event":"ready"}` + "\n" + `{"event":"refu`,
		`sed","host":"evil.com","port":443,"reason":"not_allowed"}` + "\n",
		"time=x level=INFO msg=noise\n",
		strings.Repeat("x", maxEventLine+10), // no newline: dropped, not kept
		"\n" + `{"event":"refused","host":"localhost","port":80,"reason":"forbidden_address"}` + "\n",
	}
	for _, s := range writes {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if len(got) != 3 {
		t.Fatalf("events %+v, want 3", got)
	}
	if got[0].Event != egress.EventReady || got[1].Host != "evil.com" || got[1].Port != 443 || got[2].Reason != egress.ReasonForbidden {
		t.Errorf("events %+v", got)
	}
}

func TestEgressNames(t *testing.T) {
	t.Parallel()
	a := NetworkName("inst", "gh", []string{"api.github.com:443"})
	b := NetworkName("inst", "gh", []string{"api.github.com:443", "x.com"})
	if a == b {
		t.Error("another allow-list gets the same network")
	}
	if a != NetworkName("inst", "gh", []string{"api.github.com:443"}) {
		t.Error("the same allow-list gets another network")
	}
	if !strings.HasPrefix(a, "hangar-egress-inst-gh-") {
		t.Errorf("network name %q does not name its owner and server", a)
	}
	env := ProxyEnv()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"} {
		if env[k] == "" {
			t.Errorf("%s is not set", k)
		}
	}
	if env["HTTPS_PROXY"] != "http://egress-proxy:3128" {
		t.Errorf("HTTPS_PROXY = %q", env["HTTPS_PROXY"])
	}
}

// A proxy container is labelled with its role; labels from elsewhere cannot
// claim or change it.
func TestBuildRole(t *testing.T) {
	t.Parallel()
	cfg, _, _, err := Build(Spec{ServerID: "gh", Image: "img", Role: RoleEgressProxy})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Labels[LabelRole] != RoleEgressProxy {
		t.Errorf("role label = %q", cfg.Labels[LabelRole])
	}
	cfg, _, _, err = Build(Spec{ServerID: "gh", Image: "img", ExtraLabels: map[string]string{LabelRole: RoleEgressProxy}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Labels[LabelRole]; ok {
		t.Error("an extra label set the role")
	}
}
