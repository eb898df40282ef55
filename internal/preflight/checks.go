package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// Checks is the standard list, in the order their problems are reported
// for each server.
func Checks() []Check {
	return []Check{
		{Name: "Docker socket mounts", Needs: NeedsNothing, Run: checkDockerSocket},
		{Name: "bind-mount sources", Needs: NeedsHost, Run: checkBindSources},
		{Name: "image presence", Needs: NeedsEngine, Run: checkImagePresent},
	}
}

// checkDockerSocket refuses what the start path would refuse (the same rule,
// dockerrt.ExposesEngine), and, when the host is visible, a source that is a
// symlink to the socket, which the engine would follow.
func checkDockerSocket(_ context.Context, env Env, t Target) []Problem {
	if t.Server.AllowDockerSocket {
		return nil
	}
	var out []Problem
	for i, v := range t.Server.Volumes {
		src, _, _ := strings.Cut(v, ":")
		why := ""
		switch {
		case dockerrt.ExposesEngine(src):
			why = "mounts the Docker socket (or a directory holding it), which gives the provider control of the engine"
		case env.Host != nil:
			if real, err := env.Host.EvalSymlinks(src); err == nil && path.Clean(real) != path.Clean(src) && dockerrt.ExposesEngine(real) {
				why = fmt.Sprintf("source %s is a link to %s, the Docker socket (or a directory holding it), which gives the provider control of the engine", src, real)
			}
		}
		if why != "" {
			out = append(out, Problem{
				Path: fmt.Sprintf("%s.volumes[%d]", t.Path, i),
				Msg:  why,
				Fix:  fmt.Sprintf("remove the volume, or set %s.allow_docker_socket: true if the provider must drive Docker", t.Path),
			})
		}
	}
	return out
}

// checkBindSources catches a missing source before the engine does
// something worse than failing: for a bind it creates the missing path as an
// empty, root-owned directory and the provider starts on nothing.
func checkBindSources(_ context.Context, env Env, t Target) []Problem {
	var out []Problem
	for i, v := range t.Server.Volumes {
		src, _, _ := strings.Cut(v, ":")
		_, err := env.Host.Stat(src)
		switch {
		case err == nil:
			continue
		case errors.Is(err, fs.ErrNotExist):
			out = append(out, Problem{
				Path: fmt.Sprintf("%s.volumes[%d]", t.Path, i),
				Msg:  fmt.Sprintf("source %s does not exist on the host", src),
				Fix:  "create it or fix the path",
			})
		default:
			out = append(out, Problem{
				Path: fmt.Sprintf("%s.volumes[%d]", t.Path, i),
				Msg:  fmt.Sprintf("source %s cannot be checked: %v", src, err),
				Fix:  "make it readable by the gateway's user or fix the path",
			})
		}
	}
	return out
}

// checkImagePresent: an image that is neither on the engine nor pullable
// (under the server's pull policy, the allow-list and its credentials)
// fails every start of its server. Env.Images, when set, is the gateway's
// own image gate, so the check and the start path agree; without it only
// presence is checked.
// An npm or PyPI server's image is built from its runner's runtime image:
// that is the image that must be there or pullable.
func checkImagePresent(ctx context.Context, env Env, t Target) []Problem {
	img, key, fix := t.Server.Image, t.Path+".image", "push or build the image, fix the name, or check the registry credentials and images.allowed_registries"
	srv := t.Server
	if p := t.Server.Package; p != nil {
		rt, _ := config.RuntimeFor(env.Runtimes, p.Runner)
		img, key = rt.Image, t.Path+".package.runner"
		fix = fmt.Sprintf("pull or build %s, or set runtimes.%s.image to a runtime image that is there", rt.Image, p.Runner)
		c := *t.Server
		c.Image, c.Package = rt.Image, nil
		srv = &c
	}
	ictx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	if env.Images != nil {
		if err := env.Images.Available(ictx, srv); err != nil {
			return []Problem{{Path: key, Msg: err.Error(), Fix: fix}}
		}
		return nil
	}
	_, err := env.Engine.ImageInspect(ictx, img)
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err):
		return []Problem{{
			Path: key,
			Msg:  fmt.Sprintf("image %s is not present on the Docker engine", img),
			Fix:  fmt.Sprintf("build or pull it (docker pull %s), or fix the name", img),
		}}
	default:
		return []Problem{{
			Path: key,
			Msg:  fmt.Sprintf("image %s cannot be inspected: %v", img, err),
			Fix:  "check that the Docker engine is healthy and the name is valid",
		}}
	}
}
