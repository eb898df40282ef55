package dockerrt

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// BuildAPI is what building an image in a container needs of the engine
// besides API: a Runtime whose client has it can Commit.
type BuildAPI interface {
	CopyToContainer(ctx context.Context, id string, opts client.CopyToContainerOptions) (client.CopyToContainerResult, error)
	ContainerCommit(ctx context.Context, id string, opts client.ContainerCommitOptions) (client.ContainerCommitResult, error)
	ImageRemove(ctx context.Context, image string, opts client.ImageRemoveOptions) (client.ImageRemoveResult, error)
	ImageList(ctx context.Context, opts client.ImageListOptions) (client.ImageListResult, error)
}

var _ BuildAPI = (*client.Client)(nil)

// RolePackageBuild is LabelRole of the container an image is built in.
const RolePackageBuild = "package-build"

// Limits of a build container: installing a package (npm, pip) takes more
// than serving it.
const (
	buildMemoryBytes = 1 << 30
	buildNanoCPUs    = 2_000_000_000
	buildPidsLimit   = 512
	buildTmpfs       = "rw,nosuid,size=1g" // exec allowed: pip runs build backends from /tmp
	buildOutputBytes = 32 << 10
	commitTimeout    = 10 * time.Minute
)

// File is one entry of what Commit copies into the build container before
// it starts: a directory when Dir is set, else a file holding Data.
type File struct {
	Path     string // absolute
	Dir      bool
	Mode     int64
	UID, GID int
	Data     []byte
}

// CommitSpec is an image made by running Cmd once in a container of Base
// and committing what it leaves: how the gateway builds an npm or PyPI
// server's image. The container is hardened like a provider's (every
// capability dropped, no-new-privileges, limits, a non-root User) but its
// root is writable (that is what is committed) and it joins Network,
// where the package registry is reachable. It gets nothing of a server's
// configuration: no env, no mounts.
type CommitSpec struct {
	ServerID string // LabelServer of the build container and the image
	Base     string // the image (ID) to build on
	Files    []File
	Cmd      []string // run as the container's entrypoint
	User     string
	// Network is the network mode of the build: "bridge" or a network the
	// operator configured for it; never host or another container's.
	Network string
	// Tag is the reference the image gets, only once it is complete.
	Tag string
	// Image is the configuration of the result: its labels (on top of
	// the build container's, which it inherits), entrypoint, env
	// (overriding the base image's by name), user and working dir.
	Labels     map[string]string
	Entrypoint []string
	Env        []string
	WorkingDir string
}

// BuildError is a build whose command failed: the exit code and the last
// lines the command wrote.
type BuildError struct {
	Code   int64
	Output string
}

func (e *BuildError) Error() string {
	msg := fmt.Sprintf("exit %d", e.Code)
	if e.Output != "" {
		msg += ": " + e.Output
	}
	return msg
}

// Commit builds spec's image and returns its ID. The image is tagged only
// when the command succeeded and the commit completed; the build
// container is removed whatever happens (and, were the gateway killed
// meanwhile, by the next reap: it is managed like a provider's). A
// failure leaves neither a container nor a tag behind.
func (r *Runtime) Commit(ctx context.Context, spec CommitSpec) (string, error) {
	api, ok := r.api.(BuildAPI)
	if !ok {
		return "", errors.New("this engine client cannot build images")
	}
	if spec.Base == "" || spec.Tag == "" || len(spec.Cmd) == 0 {
		return "", fmt.Errorf("build for %q: base image, tag and command are required", spec.ServerID)
	}
	mode := spec.Network
	switch {
	case mode == "":
		mode = "bridge"
	case mode == "host":
		return "", errors.New("build: host networking is not allowed")
	case strings.HasPrefix(mode, "container:"):
		return "", errors.New("build: joining another container's network is not allowed")
	}
	archive, err := tarFiles(spec.Files)
	if err != nil {
		return "", fmt.Errorf("build for %q: %w", spec.ServerID, err)
	}
	if err := r.checkGuard(ctx); err != nil {
		return "", err
	}

	labels := map[string]string{
		LabelManaged: "true", LabelServer: spec.ServerID, LabelOwner: r.owner, LabelRole: RolePackageBuild,
	}
	if r.replica != "" {
		labels[LabelReplica] = r.replica
	}
	nonce := r.live.begin()
	defer r.live.end(nonce)
	labels[LabelCreate] = nonce
	pids := int64(buildPidsLimit)
	host := &container.HostConfig{
		NetworkMode: container.NetworkMode(mode),
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges:true"},
		Tmpfs:       map[string]string{"/tmp": buildTmpfs},
		Resources: container.Resources{
			Memory: buildMemoryBytes, MemorySwap: buildMemoryBytes, NanoCPUs: buildNanoCPUs, PidsLimit: &pids,
		},
		LogConfig: container.LogConfig{Type: "none"},
	}
	var netCfg *network.NetworkingConfig
	if mode != "bridge" && mode != "none" {
		netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{mode: {}}}
	}
	user := spec.User
	if user == "" {
		user = DefaultUser
	}
	cctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	created, err := r.api.ContainerCreate(cctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image: spec.Base, Entrypoint: spec.Cmd, User: user, Labels: labels,
			Env: []string{"HOME=/tmp"}, WorkingDir: "/tmp",
			AttachStdout: true, AttachStderr: true,
		},
		HostConfig: host, NetworkingConfig: netCfg,
	})
	cancel()
	if err != nil {
		return "", fmt.Errorf("create build container: %w", err)
	}
	id := created.ID
	r.live.add(id)
	defer func() {
		r.remove(id)
		r.live.drop(id)
	}()

	if len(spec.Files) > 0 {
		cpctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
		_, err := api.CopyToContainer(cpctx, id, client.CopyToContainerOptions{DestinationPath: "/", Content: bytes.NewReader(archive)})
		cancel()
		if err != nil {
			return "", fmt.Errorf("copy into the build container: %w", err)
		}
	}
	out := NewTail(buildOutputBytes)
	actx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	att, err := r.api.ContainerAttach(actx, id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	cancel()
	if err != nil {
		return "", fmt.Errorf("attach build container: %w", err)
	}
	defer att.Close()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_ = demux(out, out, att.Reader)
	}()
	// next-exit, registered before the start: not-running would answer at
	// once for a container that has not started yet.
	wait := r.api.ContainerWait(context.WithoutCancel(ctx), id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	sctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	_, err = r.api.ContainerStart(sctx, id, client.ContainerStartOptions{})
	cancel()
	if err != nil {
		return "", fmt.Errorf("start build container: %w", err)
	}
	var code int64
	select {
	case res := <-wait.Result:
		code = res.StatusCode
	case err := <-wait.Error:
		return "", fmt.Errorf("wait for the build container: %w", err)
	case <-ctx.Done():
		return "", fmt.Errorf("build abandoned: %w", ctx.Err())
	}
	select { // the last output arrives just after the exit
	case <-copied:
	case <-time.After(time.Second):
	}
	if code != 0 {
		return "", &BuildError{Code: code, Output: out.LastLines(8)}
	}

	imgLabels := maps.Clone(spec.Labels)
	if imgLabels == nil {
		imgLabels = map[string]string{}
	}
	// The image inherits the build container's labels; what marks the
	// container as a build, or as one creation, says nothing of the image.
	imgLabels[LabelRole] = ""
	imgLabels[LabelCreate] = ""
	// A commit writes the whole install (node_modules can be large). The
	// engine finishes one it has begun even when its caller leaves, so it
	// is awaited whatever happens to ctx; an image the caller no longer
	// wants is removed again below.
	cmctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	res, err := api.ContainerCommit(cmctx, id, client.ContainerCommitOptions{
		Reference: spec.Tag,
		Config: &container.Config{
			Labels: imgLabels, Entrypoint: spec.Entrypoint, Env: spec.Env, User: user, WorkingDir: spec.WorkingDir,
		},
	})
	cancel()
	if err != nil {
		return "", fmt.Errorf("commit the build container: %w", err)
	}
	if ctx.Err() != nil {
		if rerr := r.RemoveImage(context.WithoutCancel(ctx), spec.Tag); rerr != nil {
			r.log.Warn("an abandoned build's image not removed", "image", spec.Tag, "error", rerr)
		}
		return "", fmt.Errorf("build abandoned: %w", ctx.Err())
	}
	return res.ID, nil
}

// RemoveImage removes the image ref (an image's tag); one that is gone
// already is not an error. A container still using it keeps it: the
// engine refuses, and so does this.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	api, ok := r.api.(BuildAPI)
	if !ok {
		return errors.New("this engine client cannot remove images")
	}
	if err := r.checkGuard(ctx); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	defer cancel()
	_, err := api.ImageRemove(rctx, ref, client.ImageRemoveOptions{PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w", ref, err)
	}
	return nil
}

// ImageInfo is what InspectImage and Images tell of an image.
type ImageInfo struct {
	ID     string
	Labels map[string]string
	Env    []string // InspectImage only
	Tags   []string // Images only
}

// Images lists the images this gateway instance made (managed, of its
// owner) that carry every label given (a key, or key=value).
func (r *Runtime) Images(ctx context.Context, labels ...string) ([]ImageInfo, error) {
	api, ok := r.api.(BuildAPI)
	if !ok {
		return nil, errors.New("this engine client cannot list images")
	}
	f := make(client.Filters).Add("label", LabelManaged+"=true", LabelOwner+"="+r.owner)
	for _, l := range labels {
		f.Add("label", l)
	}
	lctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	defer cancel()
	list, err := api.ImageList(lctx, client.ImageListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]ImageInfo, 0, len(list.Items))
	for _, im := range list.Items {
		out = append(out, ImageInfo{ID: im.ID, Labels: im.Labels, Tags: im.RepoTags})
	}
	return out, nil
}

// InspectImage describes image; a missing image is a NotFound error
// (cerrdefs.IsNotFound).
func (r *Runtime) InspectImage(ctx context.Context, image string) (ImageInfo, error) {
	ictx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	defer cancel()
	info, err := r.api.ImageInspect(ictx, image)
	if err != nil {
		return ImageInfo{}, err
	}
	out := ImageInfo{ID: info.ID}
	if info.Config != nil {
		out.Labels, out.Env = info.Config.Labels, info.Config.Env
	}
	return out, nil
}

// tarFiles is the archive CopyToContainer extracts at /: directories
// first, each parent before its children, owners as given.
func tarFiles(files []File) ([]byte, error) {
	sorted := slices.Clone(files)
	slices.SortStableFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range sorted {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("file %q: want a clean absolute path", f.Path)
		}
		h := &tar.Header{Name: strings.TrimPrefix(f.Path, "/"), Mode: f.Mode, Uid: f.UID, Gid: f.GID, ModTime: time.Unix(0, 0)}
		if f.Dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if !f.Dir {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
