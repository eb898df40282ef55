package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/store"
)

const (
	ref     = "127.0.0.1:5000/team/math:1"
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	idA     = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	idB     = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// engine is a fake image engine: what the local tag points at, and what a
// pull makes it point at.
type engine struct {
	mu     sync.Mutex
	local  map[string]image.InspectResponse
	remote map[string]image.InspectResponse
	pulls  int
}

func newEngine() *engine {
	return &engine{local: map[string]image.InspectResponse{}, remote: map[string]image.InspectResponse{}}
}

func img(id, digest string) image.InspectResponse {
	return image.InspectResponse{ID: id, RepoDigests: []string{"127.0.0.1:5000/team/math@" + digest}}
}

func (e *engine) ImageInspect(_ context.Context, r string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if info, ok := e.local[r]; ok {
		return client.ImageInspectResult{InspectResponse: info}, nil
	}
	return client.ImageInspectResult{}, cerrdefs.ErrNotFound.WithMessage("no such image")
}

func (e *engine) DistributionInspect(context.Context, string, client.DistributionInspectOptions) (client.DistributionInspectResult, error) {
	return client.DistributionInspectResult{}, nil
}

func (e *engine) ImagePull(_ context.Context, r string, _ client.ImagePullOptions) (client.ImagePullResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pulls++
	info, ok := e.remote[r]
	if !ok {
		return streamOf(`{"errorDetail":{"message":"manifest unknown"}}`), nil
	}
	e.local[r] = info
	return streamOf(`{"status":"Downloading","id":"l1","progressDetail":{"current":50,"total":100}}` + "\n" +
		`{"status":"Pull complete","id":"l1"}`), nil
}

type stream struct{ io.ReadCloser }

func streamOf(s string) stream { return stream{io.NopCloser(strings.NewReader(s))} }

func (stream) JSONMessages(context.Context) iter.Seq2[jsonstream.Message, error] { return nil }
func (stream) Wait(context.Context) error                                        { return nil }

// pins is a fake store.Digests.
type pins struct {
	mu sync.Mutex
	m  map[string]store.ImageDigest
}

func (p *pins) ImageDigest(_ context.Context, server string) (store.ImageDigest, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.m[server]
	if !ok {
		return store.ImageDigest{}, store.ErrNotFound
	}
	return d, nil
}

func (p *pins) PutImageDigest(_ context.Context, d store.ImageDigest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]store.ImageDigest{}
	}
	p.m[d.Server] = d
	return nil
}

func (p *pins) DeleteImageDigest(_ context.Context, server string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, server)
	return nil
}

type quarantine struct {
	mu      sync.Mutex
	reasons map[string]string
}

func (q *quarantine) Quarantine(_ context.Context, server, reason, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.reasons == nil {
		q.reasons = map[string]string{}
	}
	q.reasons[server] = reason
	return nil
}

func (q *quarantine) reason(server string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.reasons[server]
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newGate(t *testing.T, e *engine) (*ImageGate, *pins, *quarantine) {
	im := dockerrt.NewImages(e, nil, quiet())
	im.SetCredsDir(t.TempDir())
	p, q := &pins{}, &quarantine{}
	return &ImageGate{Engine: im, Pins: p, Quarantine: q, Log: quiet()}, p, q
}

func dockerServer(id, origin string) *config.Server {
	s := config.NewServer(id, config.ModeDocker, config.Execution{})
	s.Image, s.Origin = ref, origin
	return s
}

// TestDigestPin: a server not from the config file records the digest at
// its first start; the same reference resolving to another digest later
// quarantines it as image_changed.
func TestDigestPin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		origin     string
		pinDigest  bool
		wantPinned bool
	}{
		{"hot-loaded", config.OriginRegistry, false, true},
		{"discovered", "docker", false, true},
		{"config file", "", false, false},
		{"config file with pin_digest", "", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEngine()
			e.remote[ref] = img(idA, digestA)
			g, p, q := newGate(t, e)
			s := dockerServer("math", tt.origin)
			s.PinDigest = tt.pinDigest
			s.Pull = config.PullAlways

			res, err := g.Check(t.Context(), s, call.Progress{})
			if err != nil {
				t.Fatalf("first start: %v", err)
			}
			if res.Digest != digestA {
				t.Errorf("digest %s, want %s", res.Digest, digestA)
			}
			if _, err := p.ImageDigest(t.Context(), "math"); (err == nil) != tt.wantPinned {
				t.Fatalf("digest recorded = %v, want %v", err == nil, tt.wantPinned)
			}
			// Same digest again: fine.
			if _, err := g.Check(t.Context(), s, call.Progress{}); err != nil {
				t.Fatalf("second start, same image: %v", err)
			}

			// The tag moves.
			e.remote[ref] = img(idB, digestB)
			_, err = g.Check(t.Context(), s, call.Progress{})
			if !tt.wantPinned {
				if err != nil {
					t.Fatalf("unpinned server refused a moved tag: %v", err)
				}
				return
			}
			var re *RefusedError
			if !errors.As(err, &re) || re.Reason != ReasonImageChanged {
				t.Fatalf("moved tag: %v, want refused with image_changed", err)
			}
			for _, w := range []string{ref, digestA, digestB, "approve the server again"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if got := q.reason("math"); got != ReasonImageChanged {
				t.Errorf("quarantined with %q, want image_changed", got)
			}
		})
	}
}

// TestApproveAcceptsTheNewImage: after image_changed, approving the server
// again records the new digest and it starts.
func TestApproveAcceptsTheNewImage(t *testing.T) {
	t.Parallel()
	e := newEngine()
	e.remote[ref] = img(idA, digestA)
	g, p, _ := newGate(t, e)
	s := dockerServer("math", config.OriginRegistry)
	s.Pull = config.PullAlways
	if _, err := g.Check(t.Context(), s, call.Progress{}); err != nil {
		t.Fatal(err)
	}
	e.remote[ref] = img(idB, digestB)
	if _, err := g.Check(t.Context(), s, call.Progress{}); err == nil {
		t.Fatal("moved tag accepted")
	}
	if err := g.Approve(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if d, _ := p.ImageDigest(t.Context(), "math"); d.Digest != digestB {
		t.Errorf("approved digest %s, want %s", d.Digest, digestB)
	}
	if _, err := g.Check(t.Context(), s, call.Progress{}); err != nil {
		t.Fatalf("after approval: %v", err)
	}
	// Approving a server whose image is not on the engine clears the
	// record: its first start records what it pulls.
	s2 := dockerServer("other", config.OriginRegistry)
	s2.Image = "127.0.0.1:5000/team/other:1"
	_ = p.PutImageDigest(t.Context(), store.ImageDigest{Server: "other", Ref: s2.Image, Digest: digestA})
	if err := g.Approve(t.Context(), s2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ImageDigest(t.Context(), "other"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("record kept for an image not on the engine: %v", err)
	}
}

// TestDigestPinLocalThenPushed: an image first seen as a local build (its
// ID) still matches once it also carries a registry digest.
func TestDigestPinLocalThenPushed(t *testing.T) {
	t.Parallel()
	e := newEngine()
	e.local[ref] = image.InspectResponse{ID: idA}
	g, _, _ := newGate(t, e)
	s := dockerServer("math", config.OriginRegistry)
	if _, err := g.Check(t.Context(), s, call.Progress{}); err != nil {
		t.Fatal(err)
	}
	e.local[ref] = img(idA, digestA)
	if _, err := g.Check(t.Context(), s, call.Progress{}); err != nil {
		t.Fatalf("same image with a repo digest now: %v", err)
	}
}

type verifier struct {
	err   error
	calls int
}

func (v *verifier) Verify(context.Context, dockerrt.ImageRef, string, string, *dockerrt.RegistryCreds) error {
	v.calls++
	return v.err
}

func TestSignatureGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		verifier *verifier
		local    bool // built locally: no registry digest
		wantErr  bool
	}{
		{"valid signature", &verifier{}, false, false},
		{"invalid signature", &verifier{err: errors.New("no signature found")}, false, true},
		{"no verifier", nil, false, true},
		{"local image cannot be verified", &verifier{}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEngine()
			e.remote[ref] = img(idA, digestA)
			if tt.local {
				e.local[ref] = image.InspectResponse{ID: idA}
			}
			g, _, q := newGate(t, e)
			if tt.verifier != nil {
				g.Verifier = tt.verifier
			}
			g.Global.Verify = &config.Verify{PublicKey: "/keys/cosign.pub"}
			_, err := g.Check(t.Context(), dockerServer("math", ""), call.Progress{})
			if tt.wantErr {
				var re *RefusedError
				if !errors.As(err, &re) || re.Reason != ReasonSignatureInvalid {
					t.Fatalf("err %v, want signature_invalid", err)
				}
				if q.reason("math") != ReasonSignatureInvalid {
					t.Errorf("not quarantined as signature_invalid")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Verified once per digest, not at every start.
			if _, err := g.Check(t.Context(), dockerServer("math", ""), call.Progress{}); err != nil {
				t.Fatal(err)
			}
			if tt.verifier.calls != 1 {
				t.Errorf("verified %d times, want once per digest", tt.verifier.calls)
			}
		})
	}
}

func TestServerRegistryAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	_ = os.WriteFile(pw, []byte("hunter2\n"), 0o600)
	s := dockerServer("math", "")
	s.RegistryAuth = &config.RegistryAuth{Username: "bot", PasswordFile: pw}
	c, err := serverCreds(s)
	if err != nil || c.Username != "bot" || c.Password != "hunter2" {
		t.Fatalf("creds %v, %v", c, err)
	}
	s.RegistryAuth.PasswordFile = filepath.Join(dir, "missing")
	if _, err := serverCreds(s); err == nil || !strings.Contains(err.Error(), "password_file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestStatusShowsDigest(t *testing.T) {
	t.Parallel()
	e := newEngine()
	e.remote[ref] = img(idA, digestA)
	g, _, _ := newGate(t, e)
	if _, err := g.Check(t.Context(), dockerServer("math", ""), call.Progress{}); err != nil {
		t.Fatal(err)
	}
	st := g.Status("math")
	if st.Digest != digestA || st.ID != idA || st.Pulling != nil {
		t.Errorf("status %+v", st)
	}
	if (*ImageGate)(nil).Status("x") != (ImageStatus{}) {
		t.Error("nil gate status")
	}
}

// TestProgressNotifications: a call carrying a progress token gets
// notifications/progress from a pull its cold start causes; one without
// a token gets none.
func TestProgressNotifications(t *testing.T) {
	t.Parallel()
	e := newEngine()
	e.remote[ref] = img(idA, digestA)
	g, _, _ := newGate(t, e)

	srv := server.NewMCPServer("t", "1")
	srv.AddTool(mcp.NewTool("start"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s := dockerServer("math", "")
		s.Pull = config.PullAlways
		var progress call.Progress
		if req.Params.Meta != nil {
			progress = call.Progress{Token: req.Params.Meta.ProgressToken, Send: func(params map[string]any) {
				_ = srv.SendNotificationToClient(ctx, "notifications/progress", params)
			}}
		}
		if _, err := g.Check(ctx, s, progress); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("ok"), nil
	})
	c, err := mcpclient.NewInProcessClient(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var got []mcp.JSONRPCNotification
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			got = append(got, n)
			mu.Unlock()
		}
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}

	call := func(token mcp.ProgressToken) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "start"
		if token != nil {
			req.Params.Meta = &mcp.Meta{ProgressToken: token}
		}
		res, err := c.CallTool(t.Context(), req)
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	call(nil)
	mu.Lock()
	n := len(got)
	mu.Unlock()
	if n != 0 {
		t.Fatalf("%d progress notifications without a token", n)
	}
	call("tok-1")
	// Notifications are forwarded on their own goroutine: wait for the
	// completion one.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n = len(got)
		done := n > 0 && strings.HasPrefix(fmt.Sprint(got[n-1].Params.AdditionalFields["message"]), "pulled image")
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d progress notifications, want progress and completion", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range got {
		if n.Params.AdditionalFields["progressToken"] != "tok-1" {
			t.Errorf("notification for another call: %v", n.Params.AdditionalFields)
		}
	}
	// Announced at once, then by bytes, never going back.
	if msg := got[0].Params.AdditionalFields["message"]; msg != "pulling image "+ref {
		t.Errorf("first notification says %v", msg)
	}
	half, prev := false, -1.0
	for _, n := range got {
		f := n.Params.AdditionalFields
		p, err := strconv.ParseFloat(fmt.Sprint(f["progress"]), 64)
		if err != nil {
			t.Fatalf("progress %v is not a number", f["progress"])
		}
		if p < prev {
			t.Errorf("progress went back: %v", got)
		}
		prev = p
		half = half || strings.Contains(f["message"].(string), "50%")
	}
	if !half {
		t.Errorf("no notification at 50%%: %v", got)
	}
	last := got[len(got)-1].Params.AdditionalFields
	if !strings.Contains(last["message"].(string), "pulled image "+ref) {
		t.Errorf("last notification %v", last)
	}
}

func TestPullProgressParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p         dockerrt.Progress
		wantTotal bool
		wantMsg   string
	}{
		{dockerrt.Progress{Ref: "x", Current: 0, Total: 0}, false, "pulling image x"},
		{dockerrt.Progress{Ref: "x", Current: 512, Total: 2048}, true, "pulling image x: 25% of 2.0 KiB"},
		{dockerrt.Progress{Ref: "x", Current: 3 << 20, Total: 3 << 20, Done: true}, true, "pulled image x"},
	}
	for _, tt := range tests {
		got := PullProgressParams("t", tt.p)
		if _, has := got["total"]; has != tt.wantTotal || got["message"] != tt.wantMsg || got["progress"] != tt.p.Current {
			t.Errorf("PullProgressParams(%+v) = %v", tt.p, got)
		}
	}
}

// TestGateFollowsReloadedSettings: the allow-list and pull policy of the
// current config apply at the next start, before any pull.
func TestGateFollowsReloadedSettings(t *testing.T) {
	t.Parallel()
	e := newEngine()
	e.remote[ref] = img(idA, digestA)
	g, _, _ := newGate(t, e)
	var mu sync.Mutex
	cur := config.Images{AllowedRegistries: []string{"ghcr.io"}}
	g.Settings = func() config.Images { mu.Lock(); defer mu.Unlock(); return cur }

	_, err := g.Check(t.Context(), dockerServer("math", ""), call.Progress{})
	if !errors.Is(err, dockerrt.ErrImageNotAllowed) || e.pulls != 0 {
		t.Fatalf("image from a registry not allowed: %v (pulls %d)", err, e.pulls)
	}
	mu.Lock()
	cur = config.Images{AllowedRegistries: []string{"127.0.0.1:*"}, Pull: config.PullNever}
	mu.Unlock()
	if _, err := g.Check(t.Context(), dockerServer("math", ""), call.Progress{}); !errors.Is(err, dockerrt.ErrPullNever) {
		t.Fatalf("after reload with pull never: %v", err)
	}
	mu.Lock()
	cur.Pull = config.PullIfNotPresent
	mu.Unlock()
	if _, err := g.Check(t.Context(), dockerServer("math", ""), call.Progress{}); err != nil || e.pulls != 1 {
		t.Fatalf("after reload allowing it: %v (pulls %d)", err, e.pulls)
	}
}
