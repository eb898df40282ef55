package app

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/backend"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// CheckImages lists the docker servers of cfg (group members included)
// whose image is neither on the engine nor pullable from its registry, one
// line each. An engine that cannot be reached is an error: nothing could
// be checked.
func CheckImages(ctx context.Context, cfg *config.Config, log *slog.Logger) ([]string, error) {
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("docker engine not reachable, images not checked: %w", err)
	}
	gate := &backend.ImageGate{Engine: dockerrt.NewImages(cli, cfg.Images.AllowedRegistries, log), Global: cfg.Images, Log: log}
	var problems []string
	var check func(path string, s *config.Server)
	check = func(path string, s *config.Server) {
		if s.Mode == config.ModeDocker && s.Image != "" {
			if err := gate.Available(ctx, s); err != nil {
				problems = append(problems, fmt.Sprintf("%s.image: %v", path, err))
			}
		}
		for i, m := range s.Members {
			check(fmt.Sprintf("%s.members[%d]", path, i), m)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(cfg.Servers)) {
		check("mcp_servers."+id, cfg.Servers[id])
	}
	return problems, nil
}
