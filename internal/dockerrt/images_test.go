package dockerrt

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// fakeEngine is the image part of an engine: a set of local images and a
// scripted pull.
type fakeEngine struct {
	mu      sync.Mutex
	local   map[string]image.InspectResponse // by full reference
	remote  map[string]image.InspectResponse // what a pull brings
	pulls   atomic.Int32
	auths   []string
	pullErr error // returned by ImagePull itself
	// streamErr is reported inside the progress stream.
	streamErr string
	// gate, when set, holds every pull until it is closed.
	gate chan struct{}
	// started receives the reference of every pull that began.
	started chan string
	// cancelled receives the reference of every pull whose caller left.
	cancelled chan string
	// layers are streamed as Downloading progress, one message per step.
	steps     int
	stepDelay time.Duration
	distErr   error
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{
		local: map[string]image.InspectResponse{}, remote: map[string]image.InspectResponse{},
		started: make(chan string, 64), cancelled: make(chan string, 64),
	}
}

func (f *fakeEngine) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info, ok := f.local[ref]
	if !ok {
		return client.ImageInspectResult{}, cerrdefs.ErrNotFound.WithMessage("No such image: " + ref)
	}
	return client.ImageInspectResult{InspectResponse: info}, nil
}

func (f *fakeEngine) DistributionInspect(_ context.Context, ref string, _ client.DistributionInspectOptions) (client.DistributionInspectResult, error) {
	return client.DistributionInspectResult{}, f.distErr
}

func (f *fakeEngine) ImagePull(ctx context.Context, ref string, opts client.ImagePullOptions) (client.ImagePullResponse, error) {
	f.pulls.Add(1)
	f.mu.Lock()
	f.auths = append(f.auths, opts.RegistryAuth)
	f.mu.Unlock()
	f.started <- ref
	if f.pullErr != nil {
		return nil, f.pullErr
	}
	pr, pw := io.Pipe()
	go func() {
		enc := json.NewEncoder(pw)
		if f.gate != nil {
			select {
			case <-f.gate:
			case <-ctx.Done():
				f.cancelled <- ref
				pw.CloseWithError(ctx.Err())
				return
			}
		}
		const total = 1000
		for i := 1; i <= f.steps; i++ {
			if f.stepDelay > 0 {
				time.Sleep(f.stepDelay)
			}
			_ = enc.Encode(jsonstream.Message{Status: "Downloading", ID: "layer1",
				Progress: &jsonstream.Progress{Current: int64(i * total / f.steps), Total: total}})
		}
		if f.streamErr != "" {
			_ = enc.Encode(jsonstream.Message{Error: &jsonstream.Error{Message: f.streamErr}})
			pw.Close()
			return
		}
		f.mu.Lock()
		if info, ok := f.remote[ref]; ok {
			f.local[ref] = info
		}
		f.mu.Unlock()
		_ = enc.Encode(jsonstream.Message{Status: "Status: Downloaded newer image for " + ref})
		pw.Close()
	}()
	return pullResp{pr}, nil
}

type pullResp struct{ *io.PipeReader }

func (pullResp) JSONMessages(context.Context) iter.Seq2[jsonstream.Message, error] { return nil }
func (pullResp) Wait(context.Context) error                                        { return nil }

var _ ImageAPI = (*fakeEngine)(nil)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

const testRef = "127.0.0.1:5000/team/math:1"

func remoteImage(id, digest string) image.InspectResponse {
	return image.InspectResponse{ID: id, RepoDigests: []string{"127.0.0.1:5000/team/math@" + digest}}
}

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	idA     = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
)

func newTestImages(f *fakeEngine, allowed ...string) *Images {
	im := NewImages(f, allowed, quiet())
	im.creds = func(string) (RegistryCreds, error) { return RegistryCreds{}, nil }
	return im
}

func TestEnsurePolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		policy    string
		present   bool
		wantPulls int32
		wantErr   error
	}{
		{"if_not_present, missing: pulls", PullIfNotPresent, false, 1, nil},
		{"if_not_present, present: no pull", PullIfNotPresent, true, 0, nil},
		{"default policy is if_not_present", "", false, 1, nil},
		{"always, present: pulls", PullAlways, true, 1, nil},
		{"always, missing: pulls", PullAlways, false, 1, nil},
		{"never, present: no pull", PullNever, true, 0, nil},
		{"never, missing: refused", PullNever, false, 0, ErrPullNever},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeEngine()
			f.remote[testRef] = remoteImage(idA, digestA)
			if tt.present {
				f.local[testRef] = remoteImage(idA, digestA)
			}
			res, err := newTestImages(f).Ensure(t.Context(), ImageRequest{Image: testRef, Policy: tt.policy})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Ensure error = %v, want %v", err, tt.wantErr)
			}
			if got := f.pulls.Load(); got != tt.wantPulls {
				t.Errorf("pulls = %d, want %d", got, tt.wantPulls)
			}
			if err == nil && (res.ID != idA || res.Digest != digestA) {
				t.Errorf("resolved %+v, want ID %s digest %s", res, idA, digestA)
			}
		})
	}
}

func TestEnsureSingleFlight(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.remote[testRef] = remoteImage(idA, digestA)
	f.gate = make(chan struct{})
	im := newTestImages(f)

	const n = 16
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := im.Ensure(t.Context(), ImageRequest{Image: testRef})
			errs <- err
		}()
	}
	<-f.started
	// Every caller must have joined the one pull before it may finish.
	deadline := time.Now().Add(5 * time.Second)
	for {
		im.puller.mu.Lock()
		w := 0
		if fl := im.puller.flights[testRef]; fl != nil {
			w = fl.waiters
		}
		im.puller.mu.Unlock()
		if w == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d callers joined the pull", w, n)
		}
		time.Sleep(time.Millisecond)
	}
	close(f.gate)
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("Ensure: %v", err)
		}
	}
	if got := f.pulls.Load(); got != 1 {
		t.Fatalf("pulls = %d, want 1", got)
	}
}

func TestPullCancelledWhenLastCallerLeaves(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.remote[testRef] = remoteImage(idA, digestA)
	f.gate = make(chan struct{})
	im := newTestImages(f)

	ctx1, cancel1 := context.WithCancel(t.Context())
	ctx2, cancel2 := context.WithCancel(t.Context())
	errs := make(chan error, 2)
	go func() { _, err := im.Ensure(ctx1, ImageRequest{Image: testRef}); errs <- err }()
	<-f.started
	go func() { _, err := im.Ensure(ctx2, ImageRequest{Image: testRef}); errs <- err }()
	waitWaiters(t, im.puller, testRef, 2)

	cancel1()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: %v, want context.Canceled", err)
	}
	select {
	case ref := <-f.cancelled:
		t.Fatalf("pull of %s cancelled while another caller still waits", ref)
	default:
	}
	cancel2()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("second caller: %v, want context.Canceled", err)
	}
	select {
	case <-f.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the pull was not cancelled after its last caller left")
	}
	im.puller.Wait()

	// A later caller starts a new pull rather than joining the dead one.
	close(f.gate)
	if _, err := im.Ensure(t.Context(), ImageRequest{Image: testRef}); err != nil {
		t.Fatalf("Ensure after cancellation: %v", err)
	}
	if got := f.pulls.Load(); got != 2 {
		t.Errorf("pulls = %d, want 2", got)
	}
}

func waitWaiters(t *testing.T, p *Puller, ref string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		w := 0
		if fl := p.flights[ref]; fl != nil {
			w = fl.waiters
		}
		p.mu.Unlock()
		if w == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters on %s, want %d", w, ref, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPullErrorTexts: every failure names the image and the registry and
// says what to do.
func TestPullErrorTexts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		pullErr   error
		streamErr string
		policy    string
		kind      error
		want      []string
	}{
		{"not found", nil, "manifest for 127.0.0.1:5000/team/math:1 not found: manifest unknown: manifest unknown", "", ErrImageNotFound,
			[]string{testRef, "registry 127.0.0.1:5000", "check the repository name and tag"}},
		{"not found before the stream", cerrdefs.ErrNotFound.WithMessage("pull access denied for x, repository does not exist"), "", "", ErrImageNotFound,
			[]string{testRef, "127.0.0.1:5000", "push the image there"}},
		{"unauthorized", nil, "Head \"https://127.0.0.1:5000/v2/team/math/manifests/1\": unauthorized: authentication required", "", ErrImageUnauthorized,
			[]string{"registry 127.0.0.1:5000 refused access to image " + testRef, "DOCKER_CONFIG", "registry_auth"}},
		{"no network", nil, "Get \"https://127.0.0.1:5000/v2/\": dial tcp 127.0.0.1:5000: connect: connection refused", "", ErrRegistryUnreachable,
			[]string{"cannot reach registry 127.0.0.1:5000 to pull image " + testRef, "pull: never"}},
		{"disk full", nil, "write /var/lib/docker/tmp/x: no space left on device", "", ErrDiskFull,
			[]string{"no disk space", testRef, "127.0.0.1:5000", "docker image prune"}},
		{"never and missing", nil, "", PullNever, ErrPullNever,
			[]string{"image " + testRef + " is not present", "pull policy is never", "not pulled from 127.0.0.1:5000", "pull: if_not_present"}},
		{"something else", nil, "the registry said no", "", ErrPullFailed,
			[]string{"pulling image " + testRef + " from 127.0.0.1:5000 failed", "the registry said no"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeEngine()
			f.pullErr, f.streamErr = tt.pullErr, tt.streamErr
			_, err := newTestImages(f).Ensure(t.Context(), ImageRequest{Image: testRef, Policy: tt.policy})
			if !errors.Is(err, tt.kind) {
				t.Fatalf("error %v is not %v", err, tt.kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestPullErrorRedactsPassword(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.streamErr = "unauthorized: bad credentials s3cret-pw for bot"
	im := newTestImages(f)
	_, err := im.Ensure(t.Context(), ImageRequest{Image: testRef, Creds: &RegistryCreds{Username: "bot", Password: "s3cret-pw"}})
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("error %v leaks the password", err)
	}
	if got := fmt.Sprint(RegistryCreds{Username: "bot", Password: "s3cret-pw"}); strings.Contains(got, "s3cret") {
		t.Errorf("RegistryCreds prints as %q", got)
	}
}

func TestAllowedRegistries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		image   string
		globs   []string
		allowed bool
	}{
		{"alpine", []string{"*"}, true},
		{"alpine", nil, true},
		{"alpine", []string{"docker.io"}, true},
		{"mcp/time:latest", []string{"docker.io"}, true},
		{"docker.io/library/alpine", []string{"ghcr.io"}, false},
		{"ghcr.io/acme/x:1", []string{"ghcr.io"}, true},
		{"GHCR.io/acme/x:1", []string{"ghcr.io"}, true},
		{"evil.ghcr.io.attacker.net/x", []string{"ghcr.io"}, false},
		{"127.0.0.1:5000/team/math:1", []string{"127.0.0.1:*"}, true},
		{"127.0.0.1/team/math:1", []string{"127.0.0.1:*"}, false},
		{"registry.example.com/x", []string{"*.example.com"}, true},
		{"example.com/x", []string{"*.example.com"}, false},
		{"localhost:5000/x", []string{"docker.io", "localhost:*"}, true},
		{"localhost/x", []string{"docker.io"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.image+" "+strings.Join(tt.globs, ","), func(t *testing.T) {
			t.Parallel()
			f := newFakeEngine()
			f.pullErr = errors.New("pull must not be attempted")
			im := newTestImages(f, tt.globs...)
			_, err := im.Ensure(t.Context(), ImageRequest{Image: tt.image})
			refused := errors.Is(err, ErrImageNotAllowed)
			if refused == tt.allowed {
				t.Fatalf("Ensure(%s) with %v: %v, want allowed=%v", tt.image, tt.globs, err, tt.allowed)
			}
			if refused {
				if f.pulls.Load() != 0 {
					t.Error("a refused image was pulled")
				}
				if !strings.Contains(err.Error(), "images.allowed_registries") {
					t.Errorf("error %q does not name the setting", err)
				}
			}
		})
	}
}

func TestDigestReference(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	ref := "127.0.0.1:5000/team/math@" + digestA
	f.remote[ref] = remoteImage(idA, digestA)
	res, err := newTestImages(f).Ensure(t.Context(), ImageRequest{Image: ref})
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != digestA || res.Ref.Digest != digestA {
		t.Errorf("resolved %+v, want digest %s", res, digestA)
	}
	if got := <-f.started; got != ref {
		t.Errorf("pulled %q, want the digest reference %q", got, ref)
	}
}

func TestLocalImageDigestIsID(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.local["docker.io/mcp-hangar/math:dev"] = image.InspectResponse{ID: idA}
	res, err := newTestImages(f).Ensure(t.Context(), ImageRequest{Image: "mcp-hangar/math:dev", Policy: PullNever})
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != idA {
		t.Errorf("digest of a locally built image = %q, want its ID", res.Digest)
	}
}

// TestDockerCreds: credentials come as the Docker client finds them:
// auths entries (any key form), a registry's credHelpers entry run from
// PATH, and a credsStore the gateway cannot run falls back to auths with a
// warning that shows no secret. Not parallel: t.Setenv (PATH).
func TestDockerCreds(t *testing.T) {
	bin := t.TempDir()
	helper := "#!/bin/sh\nread server\necho '{\"ServerURL\":\"'$server'\",\"Username\":\"helper-user\",\"Secret\":\"helper-secret\"}'\n"
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-hangartest"), []byte(helper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("DOCKER_AUTH_CONFIG", "")

	dir := t.TempDir()
	b64 := base64.StdEncoding.EncodeToString([]byte("alice:pa:ss"))
	cfg := `{"auths": {
		"https://index.docker.io/v1/": {"auth": "` + b64 + `"},
		"http://127.0.0.1:5000": {"username": "bob", "password": "pw"},
		"quay.io/some/path": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("q:w")) + `"}
	}, "credHelpers": {"helper.example:5000": "hangartest", "broken.example": "nosuchhelper"}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	for registry, want := range map[string]RegistryCreds{
		"docker.io":           {"alice", "pa:ss"},
		"127.0.0.1:5000":      {"bob", "pw"},
		"quay.io":             {"q", "w"},
		"helper.example:5000": {"helper-user", "helper-secret"},
		"ghcr.io":             {},
		"broken.example":      {},
	} {
		got, err := DockerCreds(dir, registry, log)
		if err != nil || got != want {
			t.Errorf("creds for %s = %v, %v; want %v", registry, got, err, want)
		}
	}
	if !strings.Contains(logged.String(), "nosuchhelper") || strings.Contains(logged.String(), "pa:ss") ||
		strings.Contains(logged.String(), "helper-secret") {
		t.Errorf("log = %q: want a warning naming the failed helper and no secret", logged.String())
	}

	// No dir, or no file: no credentials, no error.
	for _, d := range []string{"", t.TempDir()} {
		if got, err := DockerCreds(d, "docker.io", log); err != nil || !got.Empty() {
			t.Errorf("config dir %q: %v, %v", d, got, err)
		}
	}
	// Bad base64 is an error that quotes no secret.
	bad := t.TempDir()
	_ = os.WriteFile(filepath.Join(bad, "config.json"), []byte(`{"auths":{"x.io":{"auth":"!!notbase64-secret"}}}`), 0o600)
	if _, err := DockerCreds(bad, "x.io", log); err == nil || strings.Contains(err.Error(), "notbase64-secret") {
		t.Errorf("bad auth: %v", err)
	}
}

// TestDockerConfigDir: $DOCKER_CONFIG wins over ~/.docker. Not parallel:
// t.Setenv.
func TestDockerConfigDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	if got := DockerConfigDir(); got != dir {
		t.Errorf("DockerConfigDir() = %q, want $DOCKER_CONFIG %q", got, dir)
	}
	_ = os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":{"127.0.0.1:5000":{"username":"bob","password":"pw"}}}`), 0o600)
	f := newFakeEngine()
	f.remote[testRef] = remoteImage(idA, digestA)
	if _, err := NewImages(f, nil, quiet()).Ensure(t.Context(), ImageRequest{Image: testRef}); err != nil {
		t.Fatal(err)
	}
	if f.auths[0] == "" {
		t.Error("credentials from $DOCKER_CONFIG were not sent")
	}
	home := t.TempDir()
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("HOME", home)
	if got := DockerConfigDir(); got != filepath.Join(home, ".docker") {
		t.Errorf("DockerConfigDir() without $DOCKER_CONFIG = %q, want ~/.docker", got)
	}
}

func TestPullSendsDockerConfigCreds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":{"127.0.0.1:5000":{"username":"bob","password":"pw"}}}`), 0o600)
	f := newFakeEngine()
	f.remote[testRef] = remoteImage(idA, digestA)
	im := NewImages(f, nil, quiet())
	im.SetCredsDir(dir)
	if _, err := im.Ensure(t.Context(), ImageRequest{Image: testRef}); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.URLEncoding.DecodeString(f.auths[0])
	if err != nil {
		t.Fatal(err)
	}
	var a struct{ Username, Password, ServerAddress string }
	_ = json.Unmarshal(raw, &a)
	if a.Username != "bob" || a.Password != "pw" || a.ServerAddress != "127.0.0.1:5000" {
		t.Errorf("auth sent = %+v", a)
	}
}

// TestPullProgressThrottled: a pull streaming progress every 100ms for 5s
// reports (and logs) about once a second, plus the final 100%.
func TestPullProgressThrottled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeEngine()
		f.remote[testRef] = remoteImage(idA, digestA)
		f.steps, f.stepDelay = 50, 100*time.Millisecond
		var logged strings.Builder
		var logMu sync.Mutex
		im := NewImages(f, nil, slog.New(slog.NewTextHandler(lockedWriter{&logged, &logMu}, nil)))
		im.creds = func(string) (RegistryCreds, error) { return RegistryCreds{}, nil }
		var got []Progress
		var mu sync.Mutex
		_, err := im.Ensure(t.Context(), ImageRequest{Image: testRef, OnProgress: func(p Progress) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		// 5s of progress: the first report at once, then one per second.
		if len(got) < 5 || len(got) > 7 {
			t.Fatalf("%d progress reports for a 5s pull, want about one a second: %+v", len(got), got)
		}
		last := got[len(got)-1]
		if !last.Done || last.Percent() != 100 || last.Total != 1000 {
			t.Errorf("final report %+v, want done at 100%%", last)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Current < got[i-1].Current {
				t.Errorf("progress went back: %+v", got)
			}
		}
		logMu.Lock()
		n := strings.Count(logged.String(), "pull progress")
		logMu.Unlock()
		if n < 4 || n > 6 {
			t.Errorf("%d progress log lines for a 5s pull, want at most one a second", n)
		}
	})
}

type lockedWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestCheckWithoutPulling(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	im := newTestImages(f)
	if err := im.Check(t.Context(), testRef, "", nil); err != nil {
		t.Errorf("pullable image: %v", err)
	}
	f.distErr = errors.New("errors:\nmanifest unknown: manifest unknown")
	if err := im.Check(t.Context(), testRef, "", nil); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("missing image: %v, want not found", err)
	}
	if err := im.Check(t.Context(), testRef, PullNever, nil); !errors.Is(err, ErrPullNever) {
		t.Errorf("missing image with pull never: %v", err)
	}
	if f.pulls.Load() != 0 {
		t.Error("Check pulled")
	}
}

func TestPullerCloseEndsPulls(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.gate = make(chan struct{})
	im := newTestImages(f)
	errs := make(chan error, 1)
	go func() { _, err := im.Ensure(t.Context(), ImageRequest{Image: testRef}); errs <- err }()
	<-f.started
	im.Puller().Close()
	select {
	case <-f.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("Close left the pull running")
	}
	if err := <-errs; err == nil {
		t.Error("a pull ended by Close succeeded")
	}
}
