package redact

import (
	"maps"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp"},
		{"https://alice:pw@mcp.example.com:8443/mcp", "https://mcp.example.com:8443/mcp"},
		{"https://tok@h/mcp", "https://h/mcp"},
		{"https://h/mcp?key=SECRET&region=eu", "https://h/mcp?key=[redacted]&region=[redacted]"},
		{"https://h/mcp?flag&x=", "https://h/mcp?flag&x="},
		{"https://h/mcp?api_key=${keystore:installs/x/1}", "https://h/mcp?api_key=${keystore:installs/x/1}"},
		{"https://h/mcp#access_token=SECRET", "https://h/mcp#[redacted]"},
		{"http://u:p@h/p?a=SECRET#SECRET", "http://h/p?a=[redacted]#[redacted]"},
		{"not a url at all SECRET", Mask},
		{"http://h/%zz?SECRET", Mask},
		{"mailto:SECRET@example.com", Mask},
	} {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"no url here", "no url here"},
		{`Post "https://alice:SECRET@h/mcp?key=SECRET": dial tcp: connection refused`,
			`Post "https://h/mcp?key=[redacted]": dial tcp: connection refused`},
		{"start failed at http://h:1/x?token=SECRET.", "start failed at http://h:1/x?token=[redacted]."},
		{"two: https://a/?k=SECRET and sse://u:SECRET@b/", "two: https://a/?k=[redacted] and sse://b/"},
		{"(see https://h/mcp?k=SECRET)", "(see https://h/mcp?k=[redacted])"},
	} {
		got := Text(tt.in)
		if got != tt.want {
			t.Errorf("Text(%q) =\n %q, want\n %q", tt.in, got, tt.want)
		}
		if strings.Contains(got, "SECRET") {
			t.Errorf("Text(%q) leaks: %q", tt.in, got)
		}
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	got := Headers(map[string]string{"Authorization": "Bearer SECRET", "X-Region": "eu"})
	if want := map[string]string{"Authorization": Mask, "X-Region": Mask}; !maps.Equal(got, want) {
		t.Errorf("Headers = %v", got)
	}
	if Headers(nil) != nil {
		t.Error("Headers(nil) is not nil")
	}
}
