package dockerrt

import (
	"archive/tar"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// buildEngine runs a build container in memory: its command "exits" with
// exit when started, after writing output; commit records what it was asked.
type buildEngine struct {
	API    // unused methods panic
	mu     sync.Mutex
	exit   int64
	output string
	// hold, when set, is closed by the test to let the command exit.
	hold      chan struct{}
	created   *container.Config
	host      *container.HostConfig
	copied    map[string]*tar.Header
	waitCond  container.WaitCondition
	commits   []client.ContainerCommitOptions
	removed   []string
	images    []string // removed images
	started   chan struct{}
	attachOut net.Conn
}

func (e *buildEngine) ContainerCreate(_ context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.created, e.host = o.Config, o.HostConfig
	return client.ContainerCreateResult{ID: "build1"}, nil
}

func (e *buildEngine) CopyToContainer(_ context.Context, _ string, o client.CopyToContainerOptions) (client.CopyToContainerResult, error) {
	tr := tar.NewReader(o.Content)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.copied = map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return client.CopyToContainerResult{}, nil
		}
		if err != nil {
			return client.CopyToContainerResult{}, err
		}
		e.copied[h.Name] = h
	}
}

func (e *buildEngine) ContainerAttach(context.Context, string, client.ContainerAttachOptions) (client.ContainerAttachResult, error) {
	ours, theirs := net.Pipe()
	e.attachOut = ours
	return client.ContainerAttachResult{HijackedResponse: client.NewHijackedResponse(theirs, "")}, nil
}

func (e *buildEngine) ContainerWait(ctx context.Context, _ string, o client.ContainerWaitOptions) client.ContainerWaitResult {
	e.mu.Lock()
	e.waitCond = o.Condition
	e.mu.Unlock()
	res, errs := make(chan container.WaitResponse, 1), make(chan error, 1)
	go func() {
		<-e.started
		if e.hold != nil {
			select {
			case <-e.hold:
			case <-ctx.Done():
				errs <- ctx.Err()
				return
			}
		}
		frame := make([]byte, 8, 8+len(e.output))
		frame[0] = 2
		binary.BigEndian.PutUint32(frame[4:], uint32(len(e.output)))
		_, _ = e.attachOut.Write(append(frame, e.output...))
		_ = e.attachOut.Close()
		res <- container.WaitResponse{StatusCode: e.exit}
	}()
	return client.ContainerWaitResult{Result: res, Error: errs}
}

func (e *buildEngine) ContainerStart(context.Context, string, client.ContainerStartOptions) (client.ContainerStartResult, error) {
	close(e.started)
	return client.ContainerStartResult{}, nil
}

func (e *buildEngine) ContainerCommit(_ context.Context, _ string, o client.ContainerCommitOptions) (client.ContainerCommitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.commits = append(e.commits, o)
	return client.ContainerCommitResult{ID: "sha256:built"}, nil
}

func (e *buildEngine) ContainerRemove(_ context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.removed = append(e.removed, id)
	return client.ContainerRemoveResult{}, nil
}

func (e *buildEngine) ImageRemove(_ context.Context, ref string, _ client.ImageRemoveOptions) (client.ImageRemoveResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.images = append(e.images, ref)
	return client.ImageRemoveResult{}, nil
}

func (e *buildEngine) ImageList(context.Context, client.ImageListOptions) (client.ImageListResult, error) {
	return client.ImageListResult{}, nil
}

func buildSpec() CommitSpec {
	return CommitSpec{
		ServerID: "fetch", Base: "sha256:base", Tag: "hangar-pkg/pypi-fetch:1.0-abc",
		Files: []File{{Path: "/opt/hangar", Dir: true, Mode: 0o755, UID: 65534, GID: 65534},
			{Path: "/opt/hangar/install.sh", Mode: 0o644, UID: 65534, GID: 65534, Data: []byte("exit 0")}},
		Cmd: []string{"/bin/sh", "/opt/hangar/install.sh"}, User: "65534:65534",
		Labels: map[string]string{"io.mcp-hangar.package.version": "1.0"}, Entrypoint: []string{"/opt/hangar/venv/bin/fetch"},
		Env: []string{"HOME=/tmp"}, WorkingDir: "/tmp",
	}
}

// TestCommit: a build runs hardened, its files copied in with their owners,
// waits for the command's exit (registered before the start, so even a
// fast exit is seen), commits with the image's config (and the build's
// own labels cleared), and removes its container.
func TestCommit(t *testing.T) {
	t.Parallel()
	e := &buildEngine{started: make(chan struct{}), output: "installed\n"}
	r := New(e, "inst", slog.New(slog.DiscardHandler))
	id, err := r.Commit(t.Context(), buildSpec())
	if err != nil || id != "sha256:built" {
		t.Fatalf("Commit = %q, %v", id, err)
	}
	if e.waitCond != container.WaitConditionNextExit {
		t.Errorf("waits for %q, want next-exit", e.waitCond)
	}
	c, h := e.created, e.host
	if c.User != "65534:65534" || c.Labels[LabelRole] != RolePackageBuild || c.Labels[LabelManaged] != "true" || c.Labels[LabelOwner] != "inst" ||
		len(c.Env) != 1 || h.Privileged || h.CapDrop[0] != "ALL" || h.SecurityOpt[0] != "no-new-privileges:true" || string(h.NetworkMode) != "bridge" ||
		h.Memory != buildMemoryBytes || h.AutoRemove || len(h.Binds) != 0 {
		t.Errorf("build container %+v %+v", c, h)
	}
	if sh := e.copied["opt/hangar/install.sh"]; sh == nil || sh.Uid != 65534 || e.copied["opt/hangar/"] == nil {
		t.Errorf("copied %v", e.copied)
	}
	if len(e.commits) != 1 {
		t.Fatalf("commits %v", e.commits)
	}
	cm := e.commits[0]
	if cm.Reference != "hangar-pkg/pypi-fetch:1.0-abc" || cm.Config.Labels[LabelRole] != "" || cm.Config.Labels[LabelCreate] != "" ||
		cm.Config.Labels["io.mcp-hangar.package.version"] != "1.0" || cm.Config.Entrypoint[0] != "/opt/hangar/venv/bin/fetch" {
		t.Errorf("commit %+v %+v", cm, cm.Config)
	}
	if len(e.removed) != 1 || e.removed[0] != "build1" {
		t.Errorf("removed %v", e.removed)
	}
}

// TestCommitFailures: a failed install commits nothing and says why; a
// caller that leaves commits nothing either; neither leaves its container.
func TestCommitFailures(t *testing.T) {
	t.Parallel()
	e := &buildEngine{started: make(chan struct{}), exit: 1, output: "npm error 404 Not Found - hangar-missing\n"}
	r := New(e, "inst", slog.New(slog.DiscardHandler))
	_, err := r.Commit(t.Context(), buildSpec())
	var be *BuildError
	if !errors.As(err, &be) || be.Code != 1 || !strings.Contains(be.Output, "hangar-missing") {
		t.Errorf("failed install: %v", err)
	}
	if len(e.commits) != 0 || len(e.removed) != 1 {
		t.Errorf("commits %v, removed %v", e.commits, e.removed)
	}

	e = &buildEngine{started: make(chan struct{}), hold: make(chan struct{})}
	r = New(e, "inst", slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-e.started; cancel() }()
	if _, err := r.Commit(ctx, buildSpec()); !errors.Is(err, context.Canceled) {
		t.Errorf("abandoned build: %v", err)
	}
	if len(e.commits) != 0 || len(e.removed) != 1 {
		t.Errorf("abandoned: commits %v, removed %v", e.commits, e.removed)
	}

	if _, err := r.Commit(t.Context(), CommitSpec{ServerID: "x", Base: "b", Tag: "t", Cmd: []string{"sh"}, Network: "host"}); err == nil {
		t.Error("a build on the host network")
	}
}
