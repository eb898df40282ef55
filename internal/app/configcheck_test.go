package app

import (
	"strings"
	"testing"
)

func TestHostVisible(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		daemon, engine, local string
		inContainer           bool
		visible               bool
		reason                string
	}{
		{"engine on this host", "unix:///var/run/docker.sock", "vm", "vm", false, true, ""},
		{"engine in this container (dind)", "unix:///var/run/docker.sock", "vm", "vm", true, true, ""},
		{"container holding the host's socket", "unix:///var/run/docker.sock", "host1", "0123abcd", true, false, `runs on host "host1"`},
		{"remote engine", "tcp://10.0.0.5:2376", "vm", "vm", false, false, "on another machine"},
		{"ssh engine", "ssh://me@box", "", "vm", false, false, "on another machine"},
		{"engine down, local socket, on a host", "unix:///var/run/docker.sock", "", "vm", false, true, ""},
		{"engine down, in a container", "unix:///var/run/docker.sock", "", "abc", true, false, "runs in a container"},
		{"no client, on a host", "", "", "vm", false, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := hostVisible(tt.daemon, tt.engine, tt.local, tt.inContainer)
			if (got == "") != tt.visible || !strings.Contains(got, tt.reason) {
				t.Errorf("hostVisible = %q, want visible %v with reason containing %q", got, tt.visible, tt.reason)
			}
		})
	}
}
