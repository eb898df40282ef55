package config

import (
	"errors"
	"slices"
	"testing"
)

func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		yaml    string
		want    []string
		problem string
	}{
		{"none by default", "", nil, ""},
		{"names and addresses, canonical", "server: {allowed_hosts: [Hangar.Example.COM., \"[FD00::1]\", 192.0.2.10, hangar]}\n",
			[]string{"hangar.example.com", "fd00::1", "192.0.2.10", "hangar"}, ""},
		{"a URL", "server: {allowed_hosts: [\"https://hangar.example.com\"]}\n", nil,
			`server.allowed_hosts[0]: must be a host name or an IP address, without scheme, port or path (got "https://hangar.example.com")`},
		{"a port", "server: {allowed_hosts: [\"hangar.example.com:8080\"]}\n", nil,
			`server.allowed_hosts[0]: must be a host name or an IP address, without scheme, port or path (got "hangar.example.com:8080")`},
		{"not a list", "server: {allowed_hosts: hangar}\n", nil, `server.allowed_hosts: must be a list of strings (got "hangar")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(tt.yaml), nil)
			if tt.problem != "" {
				var ve *ValidationError
				if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].String() != tt.problem {
					t.Fatalf("error %v, want %q", err, tt.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.HTTP.AllowedHosts, tt.want) {
				t.Errorf("allowed_hosts = %q, want %q", c.HTTP.AllowedHosts, tt.want)
			}
		})
	}
}
