package egress

import (
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    string // canonical form; "" when an error is expected
		wantErr string
	}{
		{in: "api.github.com:443", want: "api.github.com:443"},
		{in: "API.GitHub.com.:443", want: "api.github.com:443"},
		{in: "*.example.com", want: "*.example.com"},
		{in: "10.1.2.3:5432", want: "10.1.2.3:5432"},
		{in: "[fd00::1]:5432", want: "[fd00::1]:5432"},
		{in: "fd00::1", want: "[fd00::1]"},
		{in: "db:*", want: "db:*"},
		{in: "localhost", want: "localhost"},
		{in: "", wantErr: "must not be empty"},
		{in: "a.com:0", wantErr: "port"},
		{in: "a.com:70000", wantErr: "port"},
		{in: "a.com:http", wantErr: "port"},
		{in: "*.com", wantErr: "wildcard"},
		{in: "a.*.com", wantErr: "not a host name"},
		{in: "*", wantErr: "not a host name"},
		{in: "10.0.0.0/8", wantErr: "ranges"},
		{in: "exa mple.com", wantErr: "not a host name"},
		{in: "http://a.com", wantErr: "not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			r, err := ParseRule(tt.in)
			if tt.wantErr != "" {
				if err == nil || !contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseRule(%q) = %v, %v; want error containing %q", tt.in, r, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRule(%q): %v", tt.in, err)
			}
			if got := r.String(); got != tt.want {
				t.Errorf("ParseRule(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestAllowPermits(t *testing.T) {
	t.Parallel()
	allow, err := ParseAllow([]string{"api.github.com:443", "*.example.com", "10.1.2.3:5432", "db:*", "[fd00::7]:443"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		port uint16
		want bool
	}{
		{"api.github.com", 443, true},
		{"API.GITHUB.COM.", 443, true},
		{"api.github.com", 80, false},
		{"github.com", 443, false},
		{"evil-api.github.com", 443, false},
		{"a.example.com", 443, true},
		{"a.example.com", 80, true},
		{"a.example.com", 8080, false},
		{"example.com", 443, false},
		{"a.b.example.com", 443, false},
		{"aexample.com", 443, false},
		{"10.1.2.3", 5432, true},
		{"10.1.2.3", 5433, false},
		{"10.1.2.4", 5432, false},
		{"::ffff:10.1.2.3", 5432, true},
		{"db", 1, true},
		{"db", 65535, true},
		{"db.other", 5432, false},
		{"fd00::7", 443, true},
		{"[fd00::7]", 443, true},
		{"169.254.169.254", 80, false},
		{"127.0.0.1", 80, false},
	}
	for _, tt := range tests {
		if got := allow.Permits(tt.host, tt.port); got != tt.want {
			t.Errorf("Permits(%q, %d) = %v, want %v", tt.host, tt.port, got, tt.want)
		}
	}
	var none Allow
	if none.Permits("api.github.com", 443) {
		t.Error("an empty allow-list permits something")
	}
}

func TestParseAllowNamesTheEntry(t *testing.T) {
	t.Parallel()
	_, err := ParseAllow([]string{"ok.com", "bad host"})
	if err == nil || !contains(err.Error(), "[1]") {
		t.Fatalf("ParseAllow error = %v, want one naming entry [1]", err)
	}
}

func TestAllowCovers(t *testing.T) {
	t.Parallel()
	admin, err := ParseAllow([]string{"*.github.com", "api.openai.com:443", "10.0.0.5:*", "*.corp.example"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ask  string
		want bool
	}{
		{"api.github.com:443", true},
		{"api.github.com", true},
		{"api.github.com:22", false},
		{"*.github.com", true},
		{"*.github.com:443", true},
		{"github.com:443", false},
		{"api.openai.com:443", true},
		{"api.openai.com", false}, // 80 is not covered
		{"10.0.0.5:5432", true},
		{"10.0.0.6:5432", false},
		{"*.corp.example:*", false},
		{"x.corp.example:8443", false},
		{"evil.com:443", false},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.ask)
		if err != nil {
			t.Fatal(err)
		}
		if got := admin.Covers(r); got != tt.want {
			t.Errorf("Covers(%q) = %v, want %v", tt.ask, got, tt.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
