package integration

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/store/pgtest"
)

// documentedEnv maps every HANGAR_ variable README.md, docs/ and the
// examples' READMEs name to the test that shows it works as written there.
var documentedEnv = map[string]string{
	"HANGAR_LISTEN":                     "TestDocumentedEnvironment",
	"HANGAR_INSTANCE":                   "TestDocumentedEnvironment",
	"HANGAR_DATA_DIR":                   "TestDocumentedEnvironment",
	"HANGAR_KEYSTORE_KEY":               "TestDocumentedEnvironment",
	"HANGAR_LOGGING__LEVEL":             "TestDocumentedEnvironment",
	"HANGAR_ALLOWED_ORIGINS":            "TestDocumentedEnvironment",
	"HANGAR_URL":                        "TestDocumentedEnvironment",
	"HANGAR_TOKEN":                      "TestDocumentedEnvironment",
	"HANGAR_TOKEN_FILE":                 "TestDocumentedEnvironment",
	"HANGAR_STORE_URL":                  "TestDocumentedEnvironment",
	"HANGAR_REPLICA":                    "TestDocumentedEnvironment",
	"HANGAR_ADVERTISE_URL":              "TestDocumentedEnvironment",
	"HANGAR_EXECUTION__MAX_CONCURRENCY": "TestParseEnvironment",
	"HANGAR_SECRET_":                    "TestHotLoad",
	"HANGAR_GO_IMAGE":                   "TestComposeVariables",
	"HANGAR_GATEWAY_IMAGE":              "TestComposeVariables",
	"HANGAR_POSTGRES_IMAGE":             "TestComposeVariables",
	"HANGAR_PROVIDER_IMAGE":             "TestComposeVariables",
	"HANGAR_PORT":                       "TestComposeStack",
	"HANGAR_POLICY__DEFAULT":            "TestPolicyDefaultFromEnvironment",
	"HANGAR_SERVER__PUBLIC_URL":         "TestPublicURL",
	"HANGAR_TELEMETRY__OTLP__ENDPOINT":  "TestTelemetryFromHangarEnv",
	"HANGAR_TELEMETRY__SAMPLE_RATIO":    "TestTelemetryFromHangarEnv",
	// docs/troubleshooting.md's misspelt override, refused naming the
	// variable as a variable that is not a key is.
	"HANGAR_LOGING__LEVEL": "TestParseProblems",
	"HANGAR_PORT_1":        "TestExampleReplicas",
	"HANGAR_PORT_2":        "TestExampleReplicas",
}

// TestDocumentedVariablesAreTested: every HANGAR_ variable the README,
// docs/ and the examples' READMEs mention has a test here that it works as
// written, and that test exists.
func TestDocumentedVariablesAreTested(t *testing.T) {
	files := []string{filepath.Join(repoRoot, "README.md")}
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	examples, _ := filepath.Glob(filepath.Join(repoRoot, "examples", "*", "README.md"))
	files = append(append(files, docs...), examples...)
	// <ID> and <RUNNER> stand for an entry's name (HANGAR_MCP_SERVERS__<ID>__IMAGE).
	re := regexp.MustCompile(`HANGAR_[A-Z0-9_<>]*[A-Z0-9_>]`)
	tests := testFunctions(t)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range re.FindAllString(string(b), -1) {
			if strings.HasPrefix(v, "HANGAR_SECRET_") {
				v = "HANGAR_SECRET_"
			}
			test, ok := documentedEnv[v]
			if !ok && config.IsKeyEnv(v) {
				// The variable of a config key (docs/configuration.md).
				test, ok = "TestEnvironmentVariablesSetKeys", true
			}
			if !ok {
				t.Errorf("%s names %s, which no test shows to work (add it to documentedEnv with its test)", filepath.Base(f), v)
				continue
			}
			if !tests[test] {
				t.Errorf("%s is shown to work by %s, which does not exist", v, test)
			}
		}
	}
}

// testFunctions are the names of the repository's Test functions.
func testFunctions(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "build") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestComposeVariables: the image variables of docker-compose.yml and
// compose/swarm.yml are the ones the files read.
func TestComposeVariables(t *testing.T) {
	compose := composeCommand(t)
	config := func(file string, env ...string) string {
		args := append(slices.Clone(compose[1:]), "-f", filepath.Join(repoRoot, file), "config")
		cmd := exec.Command(compose[0], args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s config: %v\n%s", file, err, out)
		}
		return string(out)
	}
	if out := config("docker-compose.yml", "HANGAR_GO_IMAGE=go-image:test"); !strings.Contains(out, "GO_IMAGE: go-image:test") {
		t.Errorf("docker-compose.yml does not build with $HANGAR_GO_IMAGE:\n%s", out)
	}
	out := config("compose/swarm.yml", "HANGAR_GATEWAY_IMAGE=gw:test", "HANGAR_POSTGRES_IMAGE=pg:test", "HANGAR_PROVIDER_IMAGE=prov:test")
	for _, want := range []string{"image: gw:test", "image: pg:test", "image: prov:test"} {
		if !strings.Contains(out, want) {
			t.Errorf("compose/swarm.yml lacks %q:\n%s", want, out)
		}
	}
}

// succeeded matches a hangar_call answer whose calls all succeeded.
var succeeded = regexp.MustCompile(`"failed":\s*0,`)

// envServe runs `hangar serve --config cfg` configured by env alone and
// waits for it to answer at url; stop sends SIGTERM and waits.
func envServe(t *testing.T, cfg, url string, env ...string) (stop func(), logs *syncBuffer) {
	t.Helper()
	logs = &syncBuffer{}
	cmd := exec.Command(hangarBin, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		select {
		case <-exited:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	t.Cleanup(stop)
	waitHealthy(t, url+"/healthz", 20*time.Second, exited)
	return stop, logs
}

// TestDocumentedEnvironment: a gateway configured by the documented
// variables alone: HANGAR_LISTEN, HANGAR_INSTANCE, HANGAR_DATA_DIR,
// HANGAR_KEYSTORE_KEY (seals what `hangar import` stores; another key
// cannot open it), HANGAR_LOGGING__LEVEL, HANGAR_ALLOWED_ORIGINS; the
// client's HANGAR_URL, HANGAR_TOKEN and HANGAR_TOKEN_FILE; with a shared
// store, HANGAR_STORE_URL, HANGAR_REPLICA and HANGAR_ADVERTISE_URL.
func TestDocumentedEnvironment(t *testing.T) {
	tok := "hgr_env-" + randomHex(8)
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf(`auth:
  tokens: [{name: ops, token_sha256: %q, scopes: [hangar:read, hangar:call, hangar:admin]}]
mcp_servers: {}
`, auth.HashHex(tok)))
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	instance, dataDir := newInstance(t), t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	url := "http://" + addr
	env := []string{"HANGAR_LISTEN=" + addr, "HANGAR_INSTANCE=" + instance, "HANGAR_DATA_DIR=" + dataDir,
		"HANGAR_KEYSTORE_KEY=" + key, "HANGAR_LOGGING__LEVEL=DEBUG", "HANGAR_ALLOWED_ORIGINS=http://ui.example"}
	t.Cleanup(func() {
		if left := containers(t, instance, ""); len(left) > 0 {
			t.Errorf("containers of %s left: %s", instance, describe(left))
			removeContainers(t, left)
		}
	})
	stop, logs := envServe(t, cfg, url, env...)

	hangar := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(hangarBin, args...)
		cmd.Env = append(os.Environ(), append([]string{"HANGAR_URL=" + url + "/mcp", "HANGAR_TOKEN=", "HANGAR_TOKEN_FILE="}, env...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// HANGAR_URL and HANGAR_TOKEN (import drives mcp/install), then
	// HANGAR_TOKEN_FILE (hangar call); without a token it is refused.
	out, _ := hangar([]string{"HANGAR_TOKEN=" + tok}, "import", filepath.Join(repoRoot, "testdata", "import", "claude_desktop_config.json"))
	if !strings.Contains(out, "secret_stored") {
		t.Fatalf("hangar import with HANGAR_TOKEN:\n%s", out)
	}
	add := `{"calls":[{"mcp_server":"calc","tool":"add","arguments":{"a":2,"b":3}}]}`
	if out, err := hangar([]string{"HANGAR_TOKEN_FILE=" + tokFile}, "call", "hangar_call", add); err != nil || !succeeded.MatchString(out) {
		t.Fatalf("hangar call with HANGAR_TOKEN_FILE: %v\n%s", err, out)
	}
	if out, err := hangar(nil, "call", "hangar_list"); err == nil {
		t.Errorf("hangar call without a token succeeded:\n%s", out)
	}

	// HANGAR_KEYSTORE_KEY sealed the secret: no key file was made.
	if _, err := os.Stat(filepath.Join(dataDir, "hangar.db")); err != nil {
		t.Errorf("HANGAR_DATA_DIR: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, store.KeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists although HANGAR_KEYSTORE_KEY is set (%v)", store.KeyFile, err)
	}
	// HANGAR_INSTANCE: the instance's lease and containers.
	ctx, cancel := context.WithTimeout(t.Context(), dockerTimeout)
	_, err := docker.VolumeInspect(ctx, "hangar-lease-"+instance, client.VolumeInspectOptions{})
	cancel()
	if err != nil {
		t.Errorf("no lease of instance %s: %v", instance, err)
	}
	// HANGAR_ALLOWED_ORIGINS: that origin may post, another may not.
	for origin, want := range map[string]bool{"http://ui.example": true, "http://other.example": false} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/mcp", strings.NewReader(`{}`))
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if (resp.StatusCode != http.StatusForbidden) != want {
			t.Errorf("Origin %s: %d", origin, resp.StatusCode)
		}
	}
	// HANGAR_LOGGING__LEVEL=DEBUG.
	if !strings.Contains(logs.String(), "level=DEBUG") && !strings.Contains(logs.String(), `"level":"DEBUG"`) {
		t.Errorf("no debug line in the log")
	}
	stop()

	// Another key cannot open what the first sealed.
	other := []string{"HANGAR_LISTEN=" + addr, "HANGAR_INSTANCE=" + instance, "HANGAR_DATA_DIR=" + dataDir,
		"HANGAR_KEYSTORE_KEY=" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 32)))}
	stop, logs = envServe(t, cfg, url, other...)
	out, _ = hangar([]string{"HANGAR_TOKEN=" + tok}, "call", "hangar_call", add)
	if succeeded.MatchString(out) {
		t.Errorf("with another HANGAR_KEYSTORE_KEY the sealed secret was used:\n%s", out)
	}
	stop()
	if !strings.Contains(logs.String(), "another key") || !strings.Contains(logs.String(), "HANGAR_KEYSTORE_KEY") {
		t.Errorf("with another HANGAR_KEYSTORE_KEY the log does not say so:\n%s", logs.String())
	}

	t.Run("replica", func(t *testing.T) {
		c, err := pgtest.Start(false)
		c = pgtest.Need(t, c, err)
		t.Cleanup(c.Remove)
		u, err := c.Schema(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		cfg := writeConfig(t, fmt.Sprintf("store: {password_file: %q}\nmcp_servers: {}\n", c.PasswordFile))
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		instance := newInstance(t)
		advertise := "http://" + addr
		envServe(t, cfg, "http://"+addr, "HANGAR_LISTEN="+addr, "HANGAR_INSTANCE="+instance, "HANGAR_DATA_DIR="+t.TempDir(),
			"HANGAR_KEYSTORE_KEY="+key, "HANGAR_STORE_URL="+u, "HANGAR_REPLICA=r9", "HANGAR_ADVERTISE_URL="+advertise)
		// The replica stored the check of its key: the store opens with it.
		st, err := store.OpenPostgres(store.PostgresConfig{URL: u, PasswordFile: c.PasswordFile, KeyDir: t.TempDir()},
			store.Options{KeystoreKey: []byte(strings.Repeat("k", 32))})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ms, err := st.Members(t.Context(), instance)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 1 || ms[0].Replica != "r9" || ms[0].AdvertiseURL != advertise {
			t.Errorf("members %+v, want r9 at %s", ms, advertise)
		}
	})
}
