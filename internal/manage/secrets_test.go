package manage

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/clientconfig"
	"github.com/mcp-hangar/hangar/internal/config"
)

// secretValue is in every secret of the seal table, so one search finds a
// leak.
const secretValue = "s3cr3t-VALUE"

func TestSealAndUnseal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		entry  string
		fields []string // sealed field paths, in order
		// public are values that must stay as written.
		public []string
	}{
		{"env", `{"command":"npx","args":["pkg"],"env":{"B":"s3cr3t-VALUE-b","A":"s3cr3t-VALUE-a"}}`,
			[]string{"f.env.A", "f.env.B"}, []string{"pkg"}},
		{"headers", `{"url":"https://h/mcp","headers":{"Authorization":"Bearer s3cr3t-VALUE","X-Api-Key":"s3cr3t-VALUE2"}}`,
			[]string{"f.headers.Authorization", "f.headers.X-Api-Key"}, []string{"https://h/mcp"}},
		{"token", `{"url":"https://h/mcp","token":"s3cr3t-VALUE"}`, []string{"f.token"}, nil},
		{"authorization", `{"url":"https://h/mcp","authorization":"Basic s3cr3t-VALUE"}`, []string{"f.authorization"}, nil},
		{"query", `{"url":"https://h/mcp?api_key=s3cr3t-VALUE&region=s3cr3t-VALUE-any-name&flag#frag"}`, []string{"f.url?api_key", "f.url?region"},
			[]string{"https://h/mcp?api_key=", "region=", "flag#frag"}},
		{"docker -e", `{"command":"docker","args":["run","-e","K=s3cr3t-VALUE","--env=L=s3cr3t-VALUE2","-e","NAME","img"],"env":{"NAME":"s3cr3t-VALUE3"}}`,
			[]string{"f.env.NAME", "f.args[2]", "f.args[3]"}, []string{"img", "NAME"}},
		{"flags", `{"command":"npx","args":["pkg","--api-key","s3cr3t-VALUE","--token=s3cr3t-VALUE2","--port","8080","--password"]}`,
			[]string{"f.args[2]", "f.args[3]"}, []string{"8080", "--password"}},
		{"no secrets", `{"command":"npx","args":["pkg","--verbose"]}`, nil, []string{"pkg"}},
	}
	opts := clientconfig.Options{Runtimes: map[string]config.Runtime{"npx": {Image: "node"}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, d := clientconfig.DecodeEntry("f", json.RawMessage(tt.entry))
			if d.HasError() {
				t.Fatal(d)
			}
			sealed := Seal("srv", "", e, "f")
			if !slices.Equal(sealed.Fields, tt.fields) {
				t.Errorf("sealed fields %v, want %v", sealed.Fields, tt.fields)
			}
			b, _ := json.Marshal(sealed.Entry)
			if strings.Contains(string(b), secretValue) {
				t.Fatalf("sealed entry still holds a secret: %s", b)
			}
			for _, p := range tt.public {
				if !strings.Contains(string(b), p) {
					t.Errorf("sealed entry lost public value %q: %s", p, b)
				}
			}
			for ref, v := range sealed.Secrets {
				if !strings.HasPrefix(ref, "installs/srv/") || !strings.Contains(v, secretValue) {
					t.Errorf("secret %q = %q", ref, v)
				}
			}
			// The spec from the sealed entry holds placeholders only;
			// Unseal brings back exactly the spec of the plain entry.
			spec, d := clientconfig.Map("srv", sealed.Entry, "f", opts)
			if d.HasError() {
				t.Fatal(d)
			}
			sb, _ := json.Marshal(spec)
			if strings.Contains(string(sb), secretValue) {
				t.Fatalf("spec of sealed entry holds a secret: %s", sb)
			}
			lookup := func(ref string) (string, error) {
				v, ok := sealed.Secrets[ref]
				if !ok {
					return "", errors.New("not found")
				}
				return v, nil
			}
			if err := Unseal("srv", spec, lookup); err != nil {
				t.Fatal(err)
			}
			plain, _ := clientconfig.Map("srv", e, "f", opts)
			pb, _ := json.Marshal(plain)
			ub, _ := json.Marshal(spec)
			if string(pb) != string(ub) {
				t.Errorf("unsealed spec differs from the plain one:\n got %s\nwant %s", ub, pb)
			}
		})
	}
}

// TestSealUserInfo: user-info becomes a sealed Basic authorization header
// and the stored URL has none; an explicit credential wins over it.
func TestSealUserInfo(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		entry, url, auth string
		fields           []string
	}{
		{`{"url":"https://alice:s3cr3t-VALUE@h:8443/mcp?k=s3cr3t-VALUE2"}`, "https://h:8443/mcp?k=${keystore:installs/srv/2}",
			"Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cr3t-VALUE")), []string{"f.url", "f.url?k"}},
		{`{"url":"https://al%40ce:p%3Aw@h/mcp"}`, "https://h/mcp", "Basic " + base64.StdEncoding.EncodeToString([]byte("al@ce:p:w")), []string{"f.url"}},
		{`{"url":"https://tok-s3cr3t-VALUE@h/mcp","token":"s3cr3t-VALUE"}`, "https://h/mcp", "Bearer s3cr3t-VALUE", []string{"f.token"}},
	} {
		e, _ := clientconfig.DecodeEntry("f", json.RawMessage(tt.entry))
		sealed := Seal("srv", "", e, "f")
		b, _ := json.Marshal(sealed.Entry)
		if strings.Contains(string(b), secretValue) || strings.Contains(string(b), "@h") {
			t.Errorf("%s: sealed entry holds user-info: %s", tt.entry, b)
		}
		if !slices.Equal(sealed.Fields, tt.fields) {
			t.Errorf("%s: fields %v, want %v", tt.entry, sealed.Fields, tt.fields)
		}
		spec, d := clientconfig.Map("srv", sealed.Entry, "f", clientconfig.Options{})
		if d.HasError() {
			t.Fatal(d)
		}
		if err := Unseal("srv", spec, func(ref string) (string, error) { return sealed.Secrets[ref], nil }); err != nil {
			t.Fatal(err)
		}
		if spec.Headers["Authorization"] != tt.auth {
			t.Errorf("%s: authorization %q, want %q", tt.entry, spec.Headers["Authorization"], tt.auth)
		}
		if want := strings.Replace(tt.url, "${keystore:installs/srv/2}", "s3cr3t-VALUE2", 1); spec.Endpoint != want {
			t.Errorf("%s: endpoint %q, want %q", tt.entry, spec.Endpoint, want)
		}
	}
}

func TestUnsealRefusesOtherServersSecrets(t *testing.T) {
	t.Parallel()
	s := &config.Server{Env: map[string]string{"X": "${keystore:installs/victim/1}"}}
	err := Unseal("thief", s, func(string) (string, error) { return "stolen", nil })
	if err == nil || s.Env["X"] == "stolen" {
		t.Fatalf("err %v, env %q: a placeholder resolved another server's secret", err, s.Env["X"])
	}
	// A literal placeholder in an input is sealed like any value, so it
	// can never be interpreted as a ref.
	e := clientconfig.Entry{Command: "npx", Env: map[string]string{"X": "${keystore:installs/thief/1}"}}
	sealed := Seal("thief", "", e, "f")
	if sealed.Secrets["installs/thief/1"] != "${keystore:installs/thief/1}" {
		t.Fatalf("literal placeholder not sealed as a value: %v", sealed.Secrets)
	}
}

func TestScrub(t *testing.T) {
	t.Parallel()
	got := Scrub("auth failed for token abcd1234 (abc)", []string{"abcd1234", "abc"})
	if got != "auth failed for token [redacted] (abc)" {
		t.Fatalf("got %q", got)
	}
}
