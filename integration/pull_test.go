package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/dockerrt/cosigntest"
	"github.com/mcp-hangar/hangar/internal/store"
)

// testRegistry is an OCI registry served by the test process on
// 127.0.0.1, which the engine treats as insecure (plain HTTP) by default.
type testRegistry struct {
	Host string // 127.0.0.1:port
	user string // basic auth, "" for none
	pass string

	mu        sync.Mutex
	manifests map[string]int // "/v2/<repo>/manifests/<ref>" → GET and HEAD requests
	// aborted counts blob downloads whose client went away.
	aborted int
	// slowBlobs makes blob downloads crawl (about 256 KiB/s), so a pull
	// lasts long enough to be watched.
	slowBlobs bool
}

func startRegistry(t *testing.T, user, pass string) *testRegistry {
	t.Helper()
	r := &testRegistry{user: user, pass: pass, manifests: map[string]int{}}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Host = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != r.user || p != r.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="hangar-test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		// The engine resolves a tag with HEAD (then GETs the manifest
		// only when it lacks it): either is one pull's request.
		if (req.Method == http.MethodGet || req.Method == http.MethodHead) && strings.Contains(req.URL.Path, "/manifests/") {
			r.mu.Lock()
			r.manifests[req.URL.Path]++
			r.mu.Unlock()
		}
		r.mu.Lock()
		slow := r.slowBlobs
		r.mu.Unlock()
		if slow && req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			w = slowWriter{w, req.Context(), func() { r.mu.Lock(); r.aborted++; r.mu.Unlock() }}
		}
		inner.ServeHTTP(w, req)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		// Registered first, so it runs last: after the gateways that
		// pulled from this registry are gone.
		_ = srv.Close()
		r.removeLocalRefs(t)
	})
	return r
}

// slowWriter writes 32 KiB every 125 ms, and reports (once) a client
// that went away.
type slowWriter struct {
	http.ResponseWriter
	ctx     context.Context
	onAbort func()
}

func (s slowWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if s.ctx.Err() != nil {
			s.onAbort()
			return n, s.ctx.Err()
		}
		k := min(len(p), 32<<10)
		m, err := s.ResponseWriter.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		if f, ok := s.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		p = p[k:]
		time.Sleep(125 * time.Millisecond)
	}
	return n, nil
}

// removeLocalRefs removes every tag and digest reference the engine holds
// for this registry (pulls leave repo@digest behind); the images stay
// while other tags (mcp-hangar/math:dev) hold them.
func (r *testRegistry) removeLocalRefs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := docker.ImageList(ctx, client.ImageListOptions{})
	if err != nil {
		t.Logf("list images: %v", err)
		return
	}
	for _, im := range list.Items {
		for _, ref := range append(im.RepoTags, im.RepoDigests...) {
			if strings.HasPrefix(ref, r.Host+"/") {
				removeImageTag(t, ref)
			}
		}
	}
}

// manifestGets counts requests for repo's manifest by tag.
func (r *testRegistry) manifestGets(repo, tag string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.manifests["/v2/"+repo+"/manifests/"+tag]
}

func (r *testRegistry) auth() string {
	b, _ := json.Marshal(map[string]string{"username": r.user, "password": r.pass, "serveraddress": r.Host})
	return base64.URLEncoding.EncodeToString(b)
}

// push tags the local image src as <registry>/<repo>:<tag>, pushes it
// through the engine, removes the new tag again (so the engine must pull
// it) and returns the full reference and its manifest digest. The cleanup
// removes any local tag of it left by the gateway's pulls.
func (r *testRegistry) push(t *testing.T, src, repo, tag string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ref := r.Host + "/" + repo + ":" + tag
	if _, err := docker.ImageTag(ctx, client.ImageTagOptions{Source: src, Target: ref}); err != nil {
		t.Fatalf("tag %s as %s: %v", src, ref, err)
	}
	t.Cleanup(func() { removeImageTag(t, ref) })
	auth := r.auth()
	if r.user == "" {
		auth = base64.URLEncoding.EncodeToString([]byte("{}"))
	}
	resp, err := docker.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: auth})
	if err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	if err := resp.Wait(ctx); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	removeImageTag(t, ref)
	return ref, r.digest(t, repo, tag)
}

// digest asks the registry (not the engine) for a tag's manifest digest.
func (r *testRegistry) digest(t *testing.T, repo, tag string) string {
	t.Helper()
	tr, err := name.NewTag(r.Host + "/" + repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	auth := authn.Anonymous
	if r.user != "" {
		auth = &authn.Basic{Username: r.user, Password: r.pass}
	}
	desc, err := remote.Head(tr, remote.WithAuth(auth))
	if err != nil {
		t.Fatalf("head %s: %v", tr, err)
	}
	return desc.Digest.String()
}

// removeImageTag untags ref on the engine (the image stays while another
// tag, such as mcp-hangar/math:dev, holds it).
func removeImageTag(t *testing.T, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := docker.ImageRemove(ctx, ref, client.ImageRemoveOptions{}); err != nil && !isNotFound(err) {
		t.Logf("remove image %s: %v", ref, err)
	}
}

func uniqueTag() string { return "t" + randomHex(6) }

// TestPullFirstCallPullsAndAnswers: an image only in a registry is pulled
// by the first call, which then answers; hangar_details shows its digest.
func TestPullFirstCallPullsAndAnswers(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, "", "")
	tag := uniqueTag()
	ref, digest := reg.push(t, "mcp-hangar/math:dev", "hangar-test/math", tag)
	before := reg.manifestGets("hangar-test/math", tag)

	g := startGateway(t, fmt.Sprintf(`
images: {allowed_registries: ["127.0.0.1:*"]}
mcp_servers:
  math: {mode: docker, image: %q}
  pinned: {mode: docker, image: %q, pull: always}
`, ref, reg.Host+"/hangar-test/math@"+digest))
	s := connect(t, g.MCPURL)

	// By digest: pulled by that digest, and it answers.
	if r := s.callOne(t, "pinned", "add", map[string]any{"a": 1, "b": 1}); r["success"] != true {
		t.Errorf("add on image@digest = %v", r)
	}
	if n := reg.manifestGets("hangar-test/math", digest); n < 1 {
		t.Errorf("image@digest was not pulled by its digest")
	}

	r := s.callOne(t, "math", "add", map[string]any{"a": 2, "b": 3})
	if r["success"] != true || fmt.Sprint(r["result"]) != "5" {
		t.Fatalf("add on a pulled image = %v", r)
	}
	if n := reg.manifestGets("hangar-test/math", tag) - before; n != 1 {
		t.Errorf("the registry saw %d manifest requests for the tag, want 1 (one pull)", n)
	}
	d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": "math"})
	meta, _ := d["meta"].(map[string]any)
	if str(meta, "image_digest") != digest || !strings.HasPrefix(str(meta, "image_id"), "sha256:") || meta["pulling"] != nil {
		t.Errorf("hangar_details meta = %v, want image_digest %s, an image_id, not pulling", meta, digest)
	}

}

// TestPullSixteenColdStartsOnePull: sixteen servers on one image, called
// at once while all are cold, cause one pull.
func TestPullSixteenColdStartsOnePull(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, "", "")
	tag := uniqueTag()
	ref, _ := reg.push(t, "mcp-hangar/math:dev", "hangar-test/math", tag)
	before := reg.manifestGets("hangar-test/math", tag)

	var cfg strings.Builder
	cfg.WriteString("mcp_servers:\n")
	var calls []any
	for i := range 16 {
		fmt.Fprintf(&cfg, "  m%d: {mode: docker, image: %q, start_timeout_s: 120}\n", i, ref)
		calls = append(calls, map[string]any{"mcp_server": fmt.Sprintf("m%d", i), "tool": "add", "arguments": map[string]any{"a": i, "b": 1}})
	}
	g := startGateway(t, cfg.String())
	s := connect(t, g.MCPURL)
	ans := s.mustCall(t, "hangar_call", map[string]any{"calls": calls, "max_concurrency": 16, "timeout": 180})
	results, _ := ans["results"].([]any)
	ok := 0
	for _, r := range results {
		if m, _ := r.(map[string]any); m["success"] == true {
			ok++
		} else {
			t.Errorf("call failed: %v", m)
		}
	}
	if ok != 16 {
		t.Fatalf("%d of 16 cold calls answered", ok)
	}
	if n := reg.manifestGets("hangar-test/math", tag) - before; n != 1 {
		t.Errorf("the registry served the manifest %d times for 16 cold starts, want 1 (one pull)", n)
	}
}

// TestPullNeverWithMissingImage fails clearly, and pulls nothing.
func TestPullNeverWithMissingImage(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, "", "")
	tag := uniqueTag()
	ref := reg.Host + "/hangar-test/math:" + tag
	g := startGateway(t, fmt.Sprintf(`
mcp_servers:
  math: {mode: docker, image: %q, pull: never}
`, ref))
	s := connect(t, g.MCPURL)
	r := result(t, s.mustCall(t, "hangar_call", one("math", "add", map[string]any{"a": 1, "b": 1})))
	msg := fmt.Sprint(r["error"])
	if r["success"] == true || !strings.Contains(msg, ref) || !strings.Contains(msg, "pull policy is never") {
		t.Fatalf("call with pull: never and no image = %v, want an error naming the image and the policy", r)
	}
	if n := reg.manifestGets("hangar-test/math", tag); n != 0 {
		t.Errorf("pull: never pulled (%d manifest requests)", n)
	}
}

// memDigests and memQuarantine stand in for the store until it is wired.
type memDigests struct {
	mu sync.Mutex
	m  map[string]store.ImageDigest
}

func newMemDigests() *memDigests { return &memDigests{m: map[string]store.ImageDigest{}} }

func (d *memDigests) ImageDigest(_ context.Context, server string) (store.ImageDigest, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[server]
	if !ok {
		return store.ImageDigest{}, store.ErrNotFound
	}
	return v, nil
}

func (d *memDigests) DeleteImageDigest(_ context.Context, server string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, server)
	return nil
}

func (d *memDigests) PutImageDigest(_ context.Context, v store.ImageDigest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m[v.Server] = v
	return nil
}

type memQuarantine struct {
	mu      sync.Mutex
	reasons map[string]string
}

func (q *memQuarantine) Quarantine(_ context.Context, server, reason, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.reasons[server] = reason
	return nil
}

func (q *memQuarantine) reason(server string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.reasons[server]
}

// TestPullMovedTagQuarantined: a pinned server whose tag moves to another
// image is quarantined as image_changed instead of starting it: the same
// provider quarantine a tool change causes (calls refused as quarantined,
// shown in hangar_details and hangar_quarantine), lifted by hangar_approve,
// after which it starts on the new digest.
func TestPullMovedTagQuarantined(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, "", "")
	tag := uniqueTag()
	ref, first := reg.push(t, "mcp-hangar/math:dev", "hangar-test/math", tag)

	g := startGateway(t, fmt.Sprintf(`
mcp_servers:
  math: {mode: docker, image: %q, pull: always, pin_digest: true}
`, ref))
	g.App.Images.Pins = newMemDigests()
	s := connect(t, g.MCPURL)
	if r := s.callOne(t, "math", "add", map[string]any{"a": 1, "b": 1}); r["success"] != true {
		t.Fatalf("first call = %v", r)
	}
	s.mustCall(t, "hangar_stop", map[string]any{"mcp_server": "math"})

	// The tag now names another image (testkit serves add too).
	_, second := reg.push(t, "mcp-hangar/testkit:dev", "hangar-test/math", tag)
	if second == first {
		t.Fatal("test setup: both images have one digest")
	}
	r := result(t, s.mustCall(t, "hangar_call", one("math", "add", map[string]any{"a": 1, "b": 1})))
	msg := fmt.Sprint(r["error"])
	if r["success"] == true || r["error_type"] != "quarantined" || !strings.Contains(msg, "image_changed") ||
		!strings.Contains(msg, second) || !strings.Contains(msg, first) {
		t.Fatalf("call after the tag moved = %v, want quarantined: image_changed naming both digests", r)
	}
	if n := countContainers(t, g.Instance, "math"); n != 0 {
		t.Errorf("%d containers of the changed image were started", n)
	}
	d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": "math"})
	q, _ := d["quarantine"].(map[string]any)
	if q["reason"] != "image_changed" || !strings.Contains(fmt.Sprint(q["detail"]), second) {
		t.Errorf("hangar_details quarantine = %v, want image_changed with the new digest", d["quarantine"])
	}
	ql, _ := s.mustCall(t, "hangar_quarantine", nil)["quarantined"].([]any)
	found := false
	for _, e := range ql {
		if m, _ := e.(map[string]any); m["name"] == "math" && m["reason"] == "image_changed" {
			found = true
		}
	}
	if !found {
		t.Errorf("hangar_quarantine = %v, want math with image_changed", ql)
	}
	// Still refused before approval, and the stored record is there.
	if r := s.callOne(t, "math", "add", map[string]any{"a": 1, "b": 1}); r["error_type"] != "quarantined" {
		t.Errorf("second call before approval = %v", r)
	}
	if !hasQuarantineRecord(t, g, "math", "image_changed") {
		t.Error("no quarantine decision in the store")
	}

	a := s.mustCall(t, "hangar_approve", map[string]any{"mcp_server": "math"})
	if a["approved"] != true || a["reason"] != "image_changed" {
		t.Fatalf("hangar_approve = %v", a)
	}
	if hasQuarantineRecord(t, g, "math", "image_changed") {
		t.Error("the quarantine decision outlived the approval")
	}
	// The new image starts; it serves other tools (testkit's), so the
	// tool pins quarantine it next, and the same hangar_approve accepts
	// those.
	r = s.callOne(t, "math", "echo", map[string]any{"text": "hi"})
	if r["error_type"] != "quarantined" || !strings.Contains(fmt.Sprint(r["error"]), "tool_schema_changed") {
		t.Fatalf("call on the new image = %v, want its changed tools quarantined", r)
	}
	d = s.mustCall(t, "hangar_details", map[string]any{"mcp_server": "math"})
	if meta, _ := d["meta"].(map[string]any); meta["image_digest"] != second {
		t.Errorf("image_digest after approval = %v, want the new digest %s", meta["image_digest"], second)
	}
	a = s.mustCall(t, "hangar_approve", map[string]any{"mcp_server": "math"})
	if a["approved"] != true || a["reason"] != "tool_schema_changed" {
		t.Fatalf("second hangar_approve = %v", a)
	}
	if r := s.callOne(t, "math", "echo", map[string]any{"text": "hi"}); r["success"] != true {
		t.Fatalf("call after both approvals = %v", r)
	}
	if hasQuarantineRecord(t, g, "math", "tool_schema_changed") {
		t.Error("the tool quarantine decision outlived its approval")
	}
}

// hasQuarantineRecord reports whether the gateway's store holds a
// provider quarantine of server with reason.
func hasQuarantineRecord(t *testing.T, g *gw, server, reason string) bool {
	t.Helper()
	ds, err := g.App.Store.Decisions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if _, ok := store.IsProviderQuarantine(d); ok && d.Key == server && d.Reason == reason {
			return true
		}
	}
	return false
}

// TestPullSignatureVerification: with verify on, an unsigned image is
// refused as signature_invalid and a signed one starts.
func TestPullSignatureVerification(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, "", "")
	tag := uniqueTag()
	unsigned, _ := reg.push(t, "mcp-hangar/math:dev", "hangar-test/unsigned", tag)
	signed, digest := reg.push(t, "mcp-hangar/math:dev", "hangar-test/signed", tag)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := cosigntest.Sign(reg.Host+"/hangar-test/signed", digest, key); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(keyFile, cosigntest.PublicPEM(t, key), 0o600); err != nil {
		t.Fatal(err)
	}

	g := startGateway(t, fmt.Sprintf(`
images: {verify: {public_key: %q}}
mcp_servers:
  unsigned: {mode: docker, image: %q}
  signed: {mode: docker, image: %q}
`, keyFile, unsigned, signed))
	q := &memQuarantine{reasons: map[string]string{}}
	g.App.Images.Quarantine = q
	s := connect(t, g.MCPURL)

	r := result(t, s.mustCall(t, "hangar_call", one("unsigned", "add", map[string]any{"a": 1, "b": 1})))
	if msg := fmt.Sprint(r["error"]); r["success"] == true || !strings.Contains(msg, "signature_invalid") || !strings.Contains(msg, "not signed") {
		t.Errorf("unsigned image = %v, want signature_invalid", r)
	}
	if q.reason("unsigned") != "signature_invalid" {
		t.Errorf("unsigned not quarantined: %q", q.reason("unsigned"))
	}
	if n := countContainers(t, g.Instance, "unsigned"); n != 0 {
		t.Errorf("an unsigned image was started")
	}
	if r := s.callOne(t, "signed", "add", map[string]any{"a": 2, "b": 2}); r["success"] != true {
		t.Errorf("signed image = %v, want it to start and answer", r)
	}
}

// TestPullRegistryCredentials: a registry demanding credentials is pulled
// from with the Docker client config's auths, and refused clearly
// without. Not parallel: t.Setenv.
func TestPullRegistryCredentials(t *testing.T) {
	const user, pass = "hangar-bot", "pw-Zq81-not-in-logs"
	reg := startRegistry(t, user, pass)
	tag := uniqueTag()
	ref, _ := reg.push(t, "mcp-hangar/math:dev", "hangar-test/private", tag)
	cfg := fmt.Sprintf("mcp_servers:\n  math: {mode: docker, image: %q}\n", ref)

	// Without credentials: a clear refusal naming the registry.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	g := startGateway(t, cfg)
	s := connect(t, g.MCPURL)
	r := result(t, s.mustCall(t, "hangar_call", one("math", "add", map[string]any{"a": 1, "b": 1})))
	msg := fmt.Sprint(r["error"])
	if r["success"] == true || !strings.Contains(msg, "registry "+reg.Host+" refused access") || !strings.Contains(msg, "DOCKER_CONFIG") {
		t.Fatalf("pull without credentials = %v, want a refusal naming the registry and what to do", r)
	}

	// With a Docker client config holding them: it works, and the
	// password shows nowhere.
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":{"`+reg.Host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	g2 := startGateway(t, cfg)
	s2 := connect(t, g2.MCPURL)
	if r := s2.callOne(t, "math", "add", map[string]any{"a": 1, "b": 1}); r["success"] != true {
		t.Fatalf("pull with DOCKER_CONFIG credentials = %v", r)
	}
	_, _, text := s2.call(t, "hangar_details", map[string]any{"mcp_server": "math"})
	if strings.Contains(text, pass) {
		t.Errorf("hangar_details shows the registry password")
	}
}

// TestPullHotLoad: hangar_load of an oci package pulls its image from the
// registry it names, under the allow-list; one from a registry not allowed
// is refused before any pull.
func TestPullHotLoad(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, "", "")
	tag := uniqueTag()
	reg.push(t, "mcp-hangar/math:dev", "hangar-test/math", tag)
	before := reg.manifestGets("hangar-test/math", tag)
	catalog := filepath.Join(t.TempDir(), "catalog.json")
	entry := func(name, identifier string) string {
		return fmt.Sprintf(`{"name": "io.github.mcp-hangar/%s", "description": "math", "version": %q,
  "packages": [{"registryType": "oci", "identifier": %q, "version": %q, "transport": {"type": "stdio"}}]}`,
			name, tag, identifier, tag)
	}
	doc := "[" + entry("pulled-math", reg.Host+"/hangar-test/math") + ",\n" + entry("elsewhere-math", "registry.invalid/hangar-test/math") + "]"
	if err := os.WriteFile(catalog, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, fmt.Sprintf(`
images: {allowed_registries: ["127.0.0.1:*"]}
registry:
  url: ""
  catalog_file: %q
  verified_namespaces: ["io.github.mcp-hangar/"]
`, catalog))
	s := connect(t, g.MCPURL)
	requireHotloadTools(t, s)

	ans, _, text := s.call(t, "hangar_load", map[string]any{"name": "pulled-math"})
	if str(ans, "status") != "loaded" {
		t.Fatalf("hangar_load(pulled-math) = %s", text)
	}
	id := str(ans, "mcp_server")
	if r := s.callOne(t, id, "add", map[string]any{"a": 20, "b": 22}); fmt.Sprint(r["result"]) != "42" {
		t.Errorf("add on the hot-loaded server = %v", r)
	}
	if n := reg.manifestGets("hangar-test/math", tag) - before; n != 1 {
		t.Errorf("%d manifest requests for the hot-loaded image, want 1 (pulled once)", n)
	}

	_, _, text = s.call(t, "hangar_load", map[string]any{"name": "elsewhere-math"})
	if !strings.Contains(text, "registry.invalid") || !strings.Contains(text, "images.allowed_registries") {
		t.Errorf("hangar_load from a registry not allowed = %s, want a refusal naming it and the setting", text)
	}
}

// TestPullConfigCheck: `hangar config check` names the images that are
// neither present nor pullable, and only those, without pulling.
func TestPullConfigCheck(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, "", "")
	tag := uniqueTag()
	pullable, _ := reg.push(t, "mcp-hangar/math:dev", "hangar-test/math", tag)
	missing := reg.Host + "/hangar-test/missing:" + tag
	path := writeConfig(t, fmt.Sprintf(`
mcp_servers:
  local: {mode: docker, image: mcp-hangar/math:dev, pull: never}
  pullable: {mode: docker, image: %q}
  missing: {mode: docker, image: %q}
  absent: {mode: docker, image: %q, pull: never}
`, pullable, missing, pullable))
	out, err := exec.Command(hangarBin, "config", "check", path).CombinedOutput()
	if err == nil {
		t.Fatalf("config check passed with a missing image:\n%s", out)
	}
	text := string(out)
	for _, want := range []string{
		"mcp_servers.missing.image: image " + missing + " not found in registry " + reg.Host,
		"mcp_servers.absent.image: image " + pullable + " is not present on the Docker engine and its pull policy is never",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("config check output lacks %q:\n%s", want, text)
		}
	}
	for _, ok := range []string{"mcp_servers.local.", "mcp_servers.pullable."} {
		if strings.Contains(text, ok) {
			t.Errorf("config check reports %s, which is fine:\n%s", ok, text)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := docker.ImageInspect(ctx, pullable); !isNotFound(err) {
		t.Errorf("config check pulled %s (inspect: %v)", pullable, err)
	}
}

// slowImage pushes an image of its own random layers (not runnable: a
// start fails after the pull) to reg and turns on slow blob downloads, so
// the engine must download it, slowly.
func slowImage(t *testing.T, reg *testRegistry, repo string, size int64) string {
	t.Helper()
	img, err := random.Image(size, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Host + "/hangar-test/" + repo + ":" + uniqueTag()
	if _, err := cosigntest.Push(ref, img); err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	reg.slowBlobs = true
	reg.mu.Unlock()
	return ref
}

// TestPullCancelledWithItsCall: a cold call that gives up mid-pull stops
// the download (the engine drops its connection to the registry), and the
// server is no longer shown pulling.
func TestPullCancelledWithItsCall(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, "", "")
	ref := slowImage(t, reg, "cancel", 4<<20)
	g := startGateway(t, fmt.Sprintf("mcp_servers:\n  slow: {mode: docker, image: %q, start_timeout_s: 300}\n", ref))
	s := connect(t, g.MCPURL)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _, _, err := s.callE(ctx, "hangar_tools", map[string]any{"mcp_server": "slow"})
	if err == nil {
		t.Fatal("a 16 s pull finished within the call's 2 s")
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		reg.mu.Lock()
		aborted := reg.aborted
		reg.mu.Unlock()
		if aborted > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the registry download went on after the only caller gave up")
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := s.mustCall(t, "hangar_status", nil)
	servers, _ := st["mcp_servers"].([]any)
	for _, sv := range servers {
		if m, _ := sv.(map[string]any); str(m, "id") == "slow" && m["pulling"] != nil {
			t.Errorf("slow still shown pulling after its pull was cancelled: %v", m)
		}
	}
}

// TestPullProgress: while a cold start pulls, hangar_status shows the
// server pulling, and the call that caused it (with a progress token)
// gets notifications/progress with growing byte counts.
func TestPullProgress(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, "", "")
	ref := slowImage(t, reg, "progress", 768<<10)

	g := startGateway(t, fmt.Sprintf("mcp_servers:\n  slow: {mode: docker, image: %q, start_timeout_s: 120}\n", ref))
	var mu sync.Mutex
	var progress []map[string]any
	tr, err := transport.NewStreamableHTTP(g.MCPURL)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			progress = append(progress, n.Params.AdditionalFields)
			mu.Unlock()
		}
	})
	caller := startSession(t, c)
	watcher := connect(t, g.MCPURL)

	done := make(chan struct{})
	go func() {
		defer close(done)
		req := mcp.CallToolRequest{}
		req.Params.Name = "hangar_tools"
		req.Params.Arguments = map[string]any{"mcp_server": "slow"}
		req.Params.Meta = &mcp.Meta{ProgressToken: "pull-1"}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, _ = caller.CallTool(ctx, req)
	}()

	var seen map[string]any
	deadline := time.Now().Add(60 * time.Second)
	for seen == nil && time.Now().Before(deadline) {
		st := watcher.mustCall(t, "hangar_status", nil)
		servers, _ := st["mcp_servers"].([]any)
		for _, sv := range servers {
			if m, _ := sv.(map[string]any); str(m, "id") == "slow" && m["pulling"] != nil {
				seen, _ = m["pulling"].(map[string]any)
				if !strings.Contains(str(st, "formatted"), "pulling image") {
					t.Errorf("hangar_status formatted does not show the pull: %s", str(st, "formatted"))
				}
			}
		}
		select {
		case <-done:
			deadline = time.Now()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if seen == nil || str(seen, "image") != ref {
		t.Errorf("hangar_status never showed slow pulling %s (last: %v)", ref, seen)
	}
	<-done

	mu.Lock()
	defer mu.Unlock()
	var last float64
	withBytes := 0
	for _, p := range progress {
		if p["progressToken"] != "pull-1" {
			t.Errorf("progress for another token: %v", p)
		}
		v, _ := p["progress"].(float64)
		if v < last {
			t.Errorf("progress went back: %v", progress)
		}
		last = v
		if _, ok := p["total"]; ok && v > 0 {
			withBytes++
		}
	}
	if withBytes < 1 || len(progress) < 3 {
		t.Errorf("progress notifications %v: want the announcement, byte counts and the end", progress)
	}
	if n := len(progress); n > 0 && !strings.HasPrefix(fmt.Sprint(progress[n-1]["message"]), "pulled image") {
		t.Errorf("last progress %v, want the pull's end", progress[n-1])
	}
}
