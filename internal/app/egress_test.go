package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/config"
)

// fakeEgressEngine knows some images and networks.
type fakeEgressEngine struct{ images, networks map[string]bool }

func (f fakeEgressEngine) ImageInspect(_ context.Context, image string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	if f.images[image] {
		return client.ImageInspectResult{}, nil
	}
	return client.ImageInspectResult{}, errors.New("No such image")
}

func (f fakeEgressEngine) NetworkInspect(_ context.Context, nw string, _ client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	if f.networks[nw] {
		return client.NetworkInspectResult{}, nil
	}
	return client.NetworkInspectResult{}, errors.New("network " + nw + " not found")
}

func TestCheckEgress(t *testing.T) {
	t.Parallel()
	eng := fakeEgressEngine{images: map[string]bool{"proxy:1": true}, networks: map[string]bool{"stack_default": true}}
	server := "mcp_servers:\n  gh:\n    mode: docker\n    image: x\n    egress: {allow: [api.github.com:443]}\n"
	plain := "mcp_servers:\n  gh:\n    mode: docker\n    image: x\n"
	tests := []struct {
		name  string
		yaml  string
		paths []string
	}{
		{name: "all there", yaml: server + "egress_proxy: {image: 'proxy:1', network: stack_default}\n"},
		{name: "defaults", yaml: server},
		{name: "missing image and network", yaml: server + "egress_proxy: {image: 'proxy:2', network: gone}\n",
			paths: []string{"egress_proxy.image", "egress_proxy.network"}},
		{name: "no server uses egress", yaml: plain + "egress_proxy: {image: 'proxy:2', network: gone}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Parse([]byte(tt.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := checkEgress(t.Context(), cfg, eng)
			if len(got) != len(tt.paths) {
				t.Fatalf("problems %v, want at %v", got, tt.paths)
			}
			for i, p := range got {
				if p.Path != tt.paths[i] || !strings.Contains(p.String(), "egress_proxy") {
					t.Errorf("problem %d = %v, want at %s", i, p, tt.paths[i])
				}
			}
		})
	}
}
