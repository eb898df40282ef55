package app

import (
	"io"
	"log/slog"

	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/backend"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// imageGate is the gate `hangar config check` asks whether an image is
// present or pullable: the start path's own rules (pull policy, allowed
// registries, credentials), without pulling anything.
func imageGate(cli *client.Client, cfg *config.Config) *backend.ImageGate {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &backend.ImageGate{Engine: dockerrt.NewImages(cli, cfg.Images.AllowedRegistries, log), Global: cfg.Images, Log: log}
}
