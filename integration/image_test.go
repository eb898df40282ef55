package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// The top-level Dockerfile builds the gateway image from the checkout, the
// way `make images` and a user's `docker build .` run it: the build stage on
// $GO_IMAGE (make sets it; mcp-hangar/go-base:dev, made from this host's
// toolchain, by default) with make's version $IMAGE_VERSION (not HANGAR_*:
// the gateways the suite starts read those as config keys), a scratch final
// stage with the binary, the default config, /data owned by the non-root
// default user, and OCI labels. With make's version the layers are make's,
// so this build is a cache hit after `make images`.
func TestGatewayImageFromDockerfile(t *testing.T) {
	t.Parallel()
	goImage := envOr("GO_IMAGE", "mcp-hangar/go-base:dev")
	version := envOr("IMAGE_VERSION", "dev")
	tag := "hangar-imagetest:" + randomHex(4)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	docker := func(args ...string) string {
		t.Helper()
		var out, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "docker", args...)
		cmd.Dir = repoRoot
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("docker %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), stderr.String())
		}
		return strings.TrimSpace(out.String())
	}
	docker("build", "-q", "--build-arg", "GO_IMAGE="+goImage, "--build-arg", "VERSION="+version, "-t", tag, ".")
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", tag).Run() })

	if got := docker("run", "--rm", tag, "version"); got != "hangar "+version {
		t.Errorf("hangar version in the image = %q, want %q", got, "hangar "+version)
	}
	if got := docker("image", "inspect", "-f", "{{.Config.User}}", tag); got != "65532:65532" {
		t.Errorf("default user = %q, want the non-root 65532:65532", got)
	}
	labels := docker("image", "inspect", "-f",
		`{{index .Config.Labels "org.opencontainers.image.version"}} {{index .Config.Labels "org.opencontainers.image.source"}}`, tag)
	if want := version + " https://github.com/mcp-hangar/hangar"; labels != want {
		t.Errorf("OCI labels version, source = %q, want %q", labels, want)
	}

	if env := docker("image", "inspect", "-f", "{{range .Config.Env}}{{println .}}{{end}}", tag); !slices.Contains(strings.Split(env, "\n"), "ZONEINFO=/usr/share/zoneinfo.zip") {
		t.Errorf("the image's environment lacks ZONEINFO=/usr/share/zoneinfo.zip:\n%s", env)
	}

	// What the final stage holds, read from a created (never started)
	// container: the binary, the config, and /data for the default user.
	id := docker("create", tag)
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })
	for path, check := range map[string]func(*tar.Header) error{
		"/hangar": func(h *tar.Header) error {
			if h.Mode&0o111 == 0 {
				return errors.New("not executable")
			}
			return nil
		},
		"/etc/hangar/config.yaml": func(*tar.Header) error { return nil },
		// Go's time zone database, for policy rules that name a zone
		// (ZONEINFO below points there): scratch has none.
		"/usr/share/zoneinfo.zip": func(h *tar.Header) error {
			if h.Typeflag != tar.TypeReg || h.Size < 100_000 {
				return errors.New("want Go's zoneinfo.zip")
			}
			return nil
		},
		"/data": func(h *tar.Header) error {
			if h.Typeflag != tar.TypeDir || h.Uid != 65532 || h.Gid != 65532 {
				return errors.New("want a directory owned by 65532:65532")
			}
			return nil
		},
	} {
		out, err := exec.CommandContext(ctx, "docker", "cp", id+":"+path, "-").Output()
		if err != nil {
			t.Errorf("%s is not in the image: %v", path, err)
			continue
		}
		h, err := tar.NewReader(bytes.NewReader(out)).Next()
		if err == io.EOF || err != nil {
			t.Errorf("%s: read its tar header: %v", path, err)
			continue
		}
		if err := check(h); err != nil {
			t.Errorf("%s (mode %o, owner %d:%d): %v", path, h.Mode, h.Uid, h.Gid, err)
		}
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
