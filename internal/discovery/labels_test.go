package discovery

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

// snap is a running, enabled container on the default bridge.
func snap(labels ...string) ContainerSnapshot {
	l := map[string]string{LabelEnabled: "true"}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	return ContainerSnapshot{
		ID:       "c0ffee0000000000000000000000000000000000000000000000000000000001",
		Name:     "/weather",
		Image:    "acme/weather:1.2",
		ImageID:  "sha256:1111",
		Labels:   l,
		Networks: map[string]string{"bridge": "172.17.0.5"},
		Running:  true,
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	stdio := func(labels ...string) ContainerSnapshot {
		s := snap(append([]string{LabelMode, "stdio"}, labels...)...)
		s.OpenStdin = true
		return s
	}
	cases := []struct {
		name    string
		in      ContainerSnapshot
		prefer  []string
		want    func(t *testing.T, c Candidate)
		wantErr []string // substrings, all present
		is      error
	}{
		{
			name: "http defaults",
			in:   snap(),
			want: func(t *testing.T, c Candidate) {
				check(t, "name", c.Name, "weather")
				check(t, "source", c.Source, SourceDocker)
				check(t, "mode", c.Mode, ModeHTTP)
				check(t, "container", c.ContainerID, snap().ID)
				check(t, "image", c.Image, "acme/weather:1.2")
				check(t, "spec.id", c.Spec.ID, "weather")
				check(t, "spec.mode", c.Spec.Mode, config.ModeRemote)
				check(t, "spec.transport", c.Spec.Transport, config.TransportHTTP)
				check(t, "spec.endpoint", c.Spec.Endpoint, "http://172.17.0.5:8080/mcp")
				check(t, "spec.origin", c.Spec.Origin, "docker")
				check(t, "spec.attach", c.Spec.AttachContainer, "")
				checkDefaults(t, c.Spec)
				if len(c.Fingerprint) != fingerprintLen {
					t.Errorf("fingerprint %q: want %d hex digits", c.Fingerprint, fingerprintLen)
				}
			},
		},
		{
			name: "all labels",
			in: snap(LabelName, "wx", LabelMode, "http", LabelPort, "9000", LabelPath, "/rpc/mcp",
				LabelGroup, "tools.a", LabelDescription, "Weather API"),
			want: func(t *testing.T, c Candidate) {
				check(t, "name", c.Name, "wx")
				check(t, "spec.id", c.Spec.ID, "wx")
				check(t, "endpoint", c.Spec.Endpoint, "http://172.17.0.5:9000/rpc/mcp")
				check(t, "group", c.Group, "tools.a")
				check(t, "description", c.Description, "Weather API")
				check(t, "spec.description", c.Spec.Description, "Weather API")
			},
		},
		{
			name: "port bounds",
			in:   snap(LabelPort, "65535"),
			want: func(t *testing.T, c Candidate) { check(t, "endpoint", c.Spec.Endpoint, "http://172.17.0.5:65535/mcp") },
		},
		{
			name: "stdio",
			in:   stdio(),
			want: func(t *testing.T, c Candidate) {
				check(t, "mode", c.Mode, ModeStdio)
				check(t, "spec.mode", c.Spec.Mode, config.ModeDocker)
				check(t, "spec.transport", c.Spec.Transport, config.TransportStdio)
				check(t, "spec.attach", c.Spec.AttachContainer, snap().ID)
				check(t, "spec.endpoint", c.Spec.Endpoint, "")
				check(t, "spec.origin", c.Spec.Origin, "docker")
				checkDefaults(t, c.Spec)
			},
		},
		{
			name: "stdio needs no address",
			in:   func() ContainerSnapshot { s := stdio(); s.Networks = nil; return s }(),
			want: func(t *testing.T, c Candidate) { check(t, "mode", c.Mode, ModeStdio) },
		},
		{
			name: "preferred network wins",
			in: func() ContainerSnapshot {
				s := snap()
				s.Networks = map[string]string{"a-net": "10.0.0.2", "bridge": "172.17.0.5", "hangar": "10.9.0.7"}
				return s
			}(),
			prefer: []string{"missing", "hangar", "bridge"},
			want:   func(t *testing.T, c Candidate) { check(t, "endpoint", c.Spec.Endpoint, "http://10.9.0.7:8080/mcp") },
		},
		{
			name: "else first network by name with an IP",
			in: func() ContainerSnapshot {
				s := snap()
				s.Networks = map[string]string{"zeta": "10.0.0.9", "alpha": "", "beta": "10.0.0.3"}
				return s
			}(),
			prefer: []string{"other"},
			want:   func(t *testing.T, c Candidate) { check(t, "endpoint", c.Spec.Endpoint, "http://10.0.0.3:8080/mcp") },
		},
		{
			name: "ipv6 address is bracketed",
			in: func() ContainerSnapshot {
				s := snap()
				s.Networks = map[string]string{"v6": "fd00::5"}
				return s
			}(),
			want: func(t *testing.T, c Candidate) { check(t, "endpoint", c.Spec.Endpoint, "http://[fd00::5]:8080/mcp") },
		},
		{
			name: "other labels are ignored",
			in: func() ContainerSnapshot {
				s := snap()
				s.Labels["com.docker.compose.service"] = "weather"
				s.Labels["mcp.hangarx"] = "1"
				return s
			}(),
			want: func(t *testing.T, c Candidate) { check(t, "name", c.Name, "weather") },
		},

		{name: "absent enabled", in: func() ContainerSnapshot { s := snap(); delete(s.Labels, LabelEnabled); return s }(), is: ErrNotEnabled},
		{name: "enabled false", in: snap(LabelEnabled, "false", LabelPort, "bogus"), is: ErrNotEnabled},
		{name: "not running", in: func() ContainerSnapshot { s := snap(); s.Running = false; return s }(), is: ErrNotRunning},

		{name: "enabled neither true nor false", in: snap(LabelEnabled, "yes"),
			wantErr: []string{`label mcp.hangar.enabled: must be "true" or "false" (got "yes")`}},
		{name: "unknown label", in: snap("mcp.hangar.prot", "8080"), wantErr: []string{"label mcp.hangar.prot: unknown"}},
		{name: "hardening labels do not exist",
			in: snap("mcp.hangar.privileged", "true", "mcp.hangar.volumes", "/:/host", "mcp.hangar.cap_add", "ALL",
				"mcp.hangar.env", "A=1", "mcp.hangar.command", "sh", "mcp.hangar.image", "evil", "mcp.hangar.network", "host"),
			wantErr: []string{
				"label mcp.hangar.privileged: unknown", "label mcp.hangar.volumes: unknown",
				"label mcp.hangar.cap_add: unknown", "label mcp.hangar.env: unknown",
				"label mcp.hangar.command: unknown", "label mcp.hangar.image: unknown",
				"label mcp.hangar.network: unknown",
			}},
		{name: "port too big", in: snap(LabelPort, "99999"), wantErr: []string{`label mcp.hangar.port: must be 1..65535 (got "99999")`}},
		{name: "port zero", in: snap(LabelPort, "0"), wantErr: []string{`label mcp.hangar.port: must be 1..65535 (got "0")`}},
		{name: "port not a number", in: snap(LabelPort, "abc"), wantErr: []string{`label mcp.hangar.port: must be 1..65535 (got "abc")`}},
		{name: "path without slash", in: snap(LabelPath, "mcp"), wantErr: []string{`label mcp.hangar.path: must start with / (got "mcp")`}},
		{name: "empty path", in: snap(LabelPath, ""), wantErr: []string{`label mcp.hangar.path: must start with / (got "")`}},
		{name: "bad mode", in: snap(LabelMode, "sse"), wantErr: []string{`label mcp.hangar.mode: must be http or stdio (got "sse")`}},
		{name: "bad name", in: snap(LabelName, "-bad"), wantErr: []string{`label mcp.hangar.name: must match ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$ (got "-bad")`}},
		{name: "empty name", in: snap(LabelName, ""), wantErr: []string{`label mcp.hangar.name: must match`}},
		{name: "name too long", in: snap(LabelName, strings.Repeat("a", 64)), wantErr: []string{`label mcp.hangar.name: must match`}},
		{name: "bad container name needs a name label",
			in:      func() ContainerSnapshot { s := snap(); s.Name = "/" + strings.Repeat("x", 70); return s }(),
			wantErr: []string{"is not a valid MCP server name", "set mcp.hangar.name"}},
		{name: "bad group", in: snap(LabelGroup, "a b"), wantErr: []string{`label mcp.hangar.group: must match ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$ (got "a b")`}},
		{name: "stdio without open stdin",
			in:      snap(LabelMode, "stdio"),
			wantErr: []string{`label mcp.hangar.mode: needs a container started with an open stdin (docker run -i) (got "stdio")`}},
		{name: "stdio with port and path", in: stdio(LabelPort, "8080", LabelPath, "/mcp"),
			wantErr: []string{`label mcp.hangar.port: not used with mode stdio (got "8080")`, `label mcp.hangar.path: not used with mode stdio (got "/mcp")`}},
		{name: "no address",
			in:      func() ContainerSnapshot { s := snap(); s.Networks = map[string]string{"none": ""}; return s }(),
			wantErr: []string{"no reachable IP address"}, is: ErrNoAddress},
		{name: "every problem at once", in: snap(LabelPort, "x", "mcp.hangar.typo", "1", LabelPath, "p"),
			wantErr: []string{"label mcp.hangar.typo: unknown", "label mcp.hangar.port:", "label mcp.hangar.path:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Decoder{PreferNetworks: tc.prefer}.Decode(tc.in)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("error %v: want errors.Is %v", err, tc.is)
			}
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; want %q", tc.wantErr)
				}
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Errorf("error %T: want *DecodeError", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q: want it to contain %q", err, w)
					}
				}
				return
			}
			if tc.is != nil {
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			tc.want(t, c)
		})
	}
}

func TestDecodeLabelErrorIsTyped(t *testing.T) {
	t.Parallel()
	_, err := Decode(snap(LabelPort, "99999"))
	var le *LabelError
	if !errors.As(err, &le) || le.Label != LabelPort || le.Value != "99999" {
		t.Fatalf("error %v: want a *LabelError about %s", err, LabelPort)
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	base, err := Decode(snap(LabelPort, "9000"))
	if err != nil {
		t.Fatal(err)
	}
	same := []struct {
		name string
		mod  func(*ContainerSnapshot)
	}{
		{"other container id", func(s *ContainerSnapshot) { s.ID = "another" }},
		{"other ip", func(s *ContainerSnapshot) { s.Networks = map[string]string{"bridge": "172.17.0.99"} }},
		// The name is part of the approval's key, not of the fingerprint.
		{"other container name", func(s *ContainerSnapshot) { s.Name = "/weather-2" }},
		{"unrelated label", func(s *ContainerSnapshot) { s.Labels["org.opencontainers.image.version"] = "9" }},
	}
	for _, tc := range same {
		s := snap(LabelPort, "9000")
		tc.mod(&s)
		c, err := Decode(s)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.Fingerprint != base.Fingerprint {
			t.Errorf("%s: fingerprint changed (%s → %s)", tc.name, base.Fingerprint, c.Fingerprint)
		}
	}

	differ := []struct {
		name string
		mod  func(*ContainerSnapshot)
	}{
		{"other image id", func(s *ContainerSnapshot) { s.ImageID = "sha256:2222" }},
		{"other label value", func(s *ContainerSnapshot) { s.Labels[LabelPort] = "9001" }},
		{"added label", func(s *ContainerSnapshot) { s.Labels[LabelDescription] = "x" }},
		{"name label", func(s *ContainerSnapshot) { s.Labels[LabelName] = "weather" }},
	}
	for _, tc := range differ {
		s := snap(LabelPort, "9000")
		tc.mod(&s)
		c, err := Decode(s)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.Fingerprint == base.Fingerprint {
			t.Errorf("%s: fingerprint unchanged", tc.name)
		}
	}

	// Without an image ID the image name stands in.
	a, b := snap(), snap()
	a.ImageID, b.ImageID = "", ""
	b.Image = "acme/weather:1.3"
	ca, _ := Decode(a)
	cb, _ := Decode(b)
	if ca.Fingerprint == cb.Fingerprint {
		t.Error("image name change without image id: fingerprint unchanged")
	}
}

func TestDecodeDoesNotShareLabels(t *testing.T) {
	t.Parallel()
	s := snap()
	before := maps.Clone(s.Labels)
	if _, err := Decode(s); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(before, s.Labels) {
		t.Error("Decode modified the snapshot's labels")
	}
}

func check(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func checkDefaults(t *testing.T, s *config.Server) {
	t.Helper()
	if s.IdleTTL != 300*time.Second || s.HealthCheckInterval != 60*time.Second || s.MaxConsecutiveFailures != 3 ||
		s.MaxConcurrency != 10 || s.StartTimeout != 30*time.Second || s.CallTimeout != 60*time.Second ||
		!s.ReadOnly || s.Protocol != config.ProtocolAuto {
		t.Errorf("lifecycle defaults: %+v", s)
	}
}
