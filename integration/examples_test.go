package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"go.yaml.in/yaml/v3"
)

// The stacks under examples/ are run the way their READMEs say: each test
// walks through its README's commands (the lines of its ```sh blocks), in
// order, in a copy of the example's directory, under a compose project of
// its own, and checks what each prints. A README command the test does not
// run, or one it runs that the README does not show, fails the test.

// composeCommands are the compose front ends installed here: the
// standalone docker-compose and the `docker compose` plugin.
func composeCommands() [][]string {
	var cmds [][]string
	if _, err := exec.LookPath("docker-compose"); err == nil {
		cmds = append(cmds, []string{"docker-compose"})
	}
	if exec.Command("docker", "compose", "version").Run() == nil {
		cmds = append(cmds, []string{"docker", "compose"})
	}
	return cmds
}

// exampleNames are the directories under examples/.
func exampleNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(repoRoot, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestExamplesCatalog: examples/README.md links every example; each has a
// README and a compose file that every compose front end here accepts,
// whose images build from the top-level Dockerfile's targets.
func TestExamplesCatalog(t *testing.T) {
	index, err := os.ReadFile(filepath.Join(repoRoot, "examples", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^FROM \S+ AS (\S+)$`).FindAllStringSubmatch(string(dockerfile), -1) {
		targets[m[1]] = true
	}
	fronts := composeCommands()
	if len(fronts) == 0 {
		t.Fatal("neither docker-compose nor `docker compose` is installed")
	}
	names := exampleNames(t)
	if len(names) < 3 {
		t.Errorf("examples/ holds %d stacks (%v), want at least 3", len(names), names)
	}
	for _, name := range names {
		dir := filepath.Join(repoRoot, "examples", name)
		if !strings.Contains(string(index), "]("+name+"/)") {
			t.Errorf("examples/README.md does not link %s/", name)
		}
		if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
			t.Errorf("examples/%s: %v", name, err)
		}
		for _, front := range fronts {
			args := append(slices.Clone(front[1:]), "-f", filepath.Join(dir, "docker-compose.yml"), "config")
			cmd := exec.Command(front[0], args...)
			cmd.Env = append(os.Environ(), "COMPOSE_PROJECT_NAME=config-check")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("examples/%s: %s config: %v\n%s", name, strings.Join(front, " "), err, stderr.String())
				continue
			}
			// Every image the file builds is a target of the top-level
			// Dockerfile (or the default one, the gateway).
			var cfg struct {
				Services map[string]struct {
					Image string `json:"image"`
					Build *struct {
						Context string `json:"context"`
						Target  string `json:"target"`
					} `json:"build"`
					Healthcheck *struct {
						Test []string `json:"test"`
					} `json:"healthcheck"`
				} `json:"services"`
			}
			if err := yamlToJSON(out, &cfg); err != nil {
				t.Fatalf("examples/%s: %s config: %v", name, strings.Join(front, " "), err)
			}
			for svc, s := range cfg.Services {
				// A gateway is healthy once it is ready (docs/observability.md).
				if s.Image == gatewayImage() && (s.Healthcheck == nil || !slices.Contains(s.Healthcheck.Test, "http://127.0.0.1:8080/readyz")) {
					t.Errorf("examples/%s: the gateway service %s has no /readyz healthcheck", name, svc)
				}
				if s.Build == nil {
					continue
				}
				if s.Build.Context != repoRoot {
					t.Errorf("examples/%s: service %s builds in %s, want the repository root %s", name, svc, s.Build.Context, repoRoot)
				}
				if s.Build.Target != "" && !targets[s.Build.Target] {
					t.Errorf("examples/%s: service %s builds target %q, which the Dockerfile does not have", name, svc, s.Build.Target)
				}
			}
		}
	}
}

// TestExampleAgent: examples/agent's agent, a Go program on the official
// SDK's client built into mcp-hangar/agent:dev, lists the gateway's tools
// and calls math through it with the generated token, on both protocol
// versions.
func TestExampleAgent(t *testing.T) {
	w := walkExample(t, "agent")
	w.run("make images")
	w.run("cd examples/agent")
	w.run("docker-compose up -d hangar")

	out := w.run("docker-compose run --rm agent")
	wantLines(t, out,
		`connected to hangar \S+ at http://hangar:8080/mcp \(protocol 2026-07-28\)`,
		`\d+ tools:`,
		`  hangar_list\s+\S`,
		`  math__add\s+\S`,
		`call math__add \{"a": 20, "b": 22\}`,
		`  => 42`)

	out = w.run(`export HANGAR_TOKEN=$(docker-compose exec -T hangar /hangar token show)`)
	out = w.run(`docker-compose run --rm -e HANGAR_TOKEN agent --protocol 2025-11-25 math__multiply '{"a": 6, "b": 7}' hangar_list '{}'`)
	wantLines(t, out,
		`connected to hangar \S+ at http://hangar:8080/mcp \(protocol 2025-11-25\)`,
		`call math__multiply \{"a": 6, "b": 7\}`,
		`  => 42`,
		`call hangar_list \{\}`,
		`  => \{.*"mcp_servers":\[\{.*"mcp_server":"math"`)

	// Without a token the gateway refuses the agent, and the agent says so.
	out, err := w.exec(`docker-compose run --rm -e HANGAR_TOKEN_FILE=/dev/null agent`)
	if err == nil || !strings.Contains(out, "token file /dev/null is empty") {
		t.Errorf("the agent without a token: %v\n%s", err, out)
	}
	out, err = w.exec(`docker-compose run --rm -e HANGAR_TOKEN=not-the-token agent`)
	if err == nil || !strings.Contains(out, "connect to http://hangar:8080/mcp") {
		t.Errorf("the agent with a wrong token: %v\n%s", err, out)
	}
	w.run("docker-compose down -v")
}

// walkthrough runs one example's README commands in order.
type walkthrough struct {
	t       *testing.T
	name    string
	dir     string // a copy of examples/<name>, where the commands run
	project string
	env     []string
	steps   []string // the README's commands
	next    int
	subst   *strings.Replacer
	exports []string
	down    bool
}

// walkExample copies examples/<name> into a temporary directory (at the
// same depth under it, so ../.. and build contexts resolve alike) and
// readies its README's commands, under the compose project
// <suite prefix>ex-<name>-<random>, which is also the gateway's instance.
// subst maps more of the README's text to what this run uses (its ports).
func walkExample(t *testing.T, name string, subst ...string) *walkthrough {
	t.Helper()
	src := filepath.Join(repoRoot, "examples", name)
	steps, err := readmeCommands(filepath.Join(src, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "examples", name)
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(filepath.Join(dir, "secrets")) // a reader's own, if any
	front := composeCommands()
	if len(front) == 0 {
		t.Fatal("neither docker-compose nor `docker compose` is installed")
	}
	w := &walkthrough{t: t, name: name, dir: dir, steps: steps,
		project: suitePrefix + "ex-" + name + "-" + randomHex(3)}
	w.env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "HANGAR_") || strings.HasPrefix(kv, "COMPOSE_")
	}), "COMPOSE_PROJECT_NAME="+w.project, "HANGAR_GATEWAY_IMAGE="+gatewayImage())
	w.subst = strings.NewReplacer(append([]string{
		"docker-compose ", strings.Join(front[0], " ") + " ",
		"../../bin/hangar ", hangarBin + " ",
	}, subst...)...)
	t.Cleanup(w.cleanup)
	return w
}

// setenv adds a variable to the commands' environment.
func (w *walkthrough) setenv(kv string) { w.env = append(w.env, kv) }

// step checks that cmd is the README's next command.
func (w *walkthrough) step(cmd string) {
	w.t.Helper()
	if w.next >= len(w.steps) {
		w.t.Fatalf("examples/%s/README.md has no command %q (its commands: %q)", w.name, cmd, w.steps)
	}
	if got := w.steps[w.next]; got != cmd {
		w.t.Fatalf("examples/%s/README.md's command %d is\n\t%s\nthe test runs\n\t%s", w.name, w.next+1, got, cmd)
	}
	w.next++
	if strings.HasPrefix(cmd, "docker-compose down") {
		w.down = true
	}
}

// run runs the README's next command, which must be cmd and must succeed,
// and returns its output.
func (w *walkthrough) run(cmd string) string {
	w.t.Helper()
	w.step(cmd)
	began := time.Now()
	defer w.took(began)
	out, err := w.exec(cmd)
	if err != nil {
		w.t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	w.t.Logf("$ %s\n%s", cmd, out)
	return out
}

// retry runs the README's next command until ok accepts its output, for
// at most within.
func (w *walkthrough) retry(cmd string, within time.Duration, ok func(out string, err error) bool) string {
	w.t.Helper()
	w.step(cmd)
	began := time.Now()
	defer w.took(began)
	deadline := began.Add(within)
	for {
		out, err := w.exec(cmd)
		if ok(out, err) {
			w.t.Logf("$ %s\n%s", cmd, out)
			return out
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s: not as expected after %s: %v\n%s", cmd, within, err, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (w *walkthrough) took(began time.Time) {
	w.t.Logf("README command %d took %s", w.next, time.Since(began).Round(time.Millisecond))
}

// exec runs a README command as the README means it: make images is what
// TestMain checked, cd is the copy's directory, an export holds for the
// commands after it; anything else runs in sh with the substitutions.
func (w *walkthrough) exec(cmd string) (string, error) {
	w.t.Helper()
	switch {
	case strings.HasPrefix(cmd, "make images"):
		// TestMain found every image; the binary of `make build` is the
		// suite's own build of cmd/hangar.
		return "", nil
	case cmd == "cd examples/"+w.name:
		return "", nil
	}
	cmd = w.subst.Replace(cmd)
	if strings.HasPrefix(cmd, "export ") {
		w.exports = append(w.exports, cmd)
		out, err := w.sh(strings.Join(w.exports, "\n"))
		return out, err
	}
	return w.sh(strings.Join(append(slices.Clone(w.exports), cmd), "\n"))
}

func (w *walkthrough) sh(script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-ec", script)
	c.Dir, c.Env = w.dir, w.env
	out, err := c.CombinedOutput()
	return string(out), err
}

// compose runs the compose front end on the example's project.
func (w *walkthrough) compose(args ...string) (string, error) {
	front := composeCommands()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, front[0], append(slices.Clone(front[1:]), args...)...)
	c.Dir, c.Env = w.dir, w.env
	out, err := c.CombinedOutput()
	return string(out), err
}

// cleanup takes the stack down (when the README's own down did not run)
// and checks that nothing of the project or its gateway is left.
func (w *walkthrough) cleanup() {
	t := w.t
	if t.Failed() {
		out, _ := w.compose("logs", "--no-color", "--tail", "40")
		t.Logf("logs of %s:\n%s", w.project, out)
	}
	if !w.down {
		if out, err := w.compose("down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
	} else if w.next != len(w.steps) {
		t.Errorf("examples/%s/README.md's commands from %d on were not run: %q", w.name, w.next+1, w.steps[w.next:])
	}
	ctx := context.Background()
	filter := make(client.Filters).Add("label", "com.docker.compose.project="+w.project)
	// The gateway removes its containers as it stops; the engine may take
	// a moment to finish.
	waitFor(t, 15*time.Second, "no containers of "+w.project, func() bool {
		list, err := docker.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
		return err == nil && len(list.Items) == 0 && countContainers(t, w.project, "") == 0
	})
	vols, err := docker.VolumeList(ctx, client.VolumeListOptions{Filters: filter})
	if err != nil {
		t.Error(err)
	} else if len(vols.Items) != 0 {
		t.Errorf("%d volume(s) of %s left after down -v", len(vols.Items), w.project)
	}
	if _, err := docker.VolumeInspect(ctx, "hangar-lease-"+w.project, client.VolumeInspectOptions{}); !isNotFound(err) {
		t.Errorf("the lease of %s outlived down -v (inspect: %v)", w.project, err)
	}
}

// readmeCommands are the lines of a README's ```sh blocks, but comments.
func readmeCommands(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cmds []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "```"):
			in = !in && line == "```sh"
		case in && line != "" && !strings.HasPrefix(line, "#"):
			cmds = append(cmds, line)
		}
	}
	return cmds, sc.Err()
}

// wantLines checks that out has a line matching each pattern, in order.
func wantLines(t *testing.T, out string, patterns ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for _, p := range patterns {
		re := regexp.MustCompile("^" + p)
		for i < len(lines) && !re.MatchString(lines[i]) {
			i++
		}
		if i == len(lines) {
			t.Errorf("no line matching %q (after the ones before it) in:\n%s", p, out)
			return
		}
		i++
	}
}

// yamlToJSON decodes compose's YAML output into v by way of JSON tags.
func yamlToJSON(b []byte, v any) error {
	var m any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return err
	}
	j, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(j, v)
}

// TestExampleDiscovery: examples/discovery's math container, labelled and
// configured nowhere in hangar, waits for approval with the tools it
// serves; a call to it before is refused, and after hangar_approve it is
// served, also after the gateway restarted (the approval is in the store).
func TestExampleDiscovery(t *testing.T) {
	w := walkExample(t, "discovery")
	w.run("make images")
	w.run("cd examples/discovery")
	began := time.Now()
	w.run("docker-compose up -d")

	// The gateway needs a moment to start, and discovery to check the
	// container, before math is pending.
	type pending struct {
		Name, Source, Mode string
		Tools              []struct{ Name string }
	}
	w.retry("docker-compose exec -T hangar /hangar call hangar_discovered", 45*time.Second, func(out string, err error) bool {
		var got struct{ Pending []pending }
		return err == nil && json.Unmarshal([]byte(out), &got) == nil && slices.ContainsFunc(got.Pending, func(p pending) bool {
			return p.Name == "math" && p.Source == "docker" && p.Mode == "remote" && len(p.Tools) == 4
		})
	})
	t.Logf("math pending %s after up", time.Since(began).Round(time.Millisecond))

	call := `docker-compose exec -T hangar /hangar call hangar_call '{"calls": [{"mcp_server": "math", "tool": "add", "arguments": {"a": 20, "b": 22}}]}'`
	if out := w.run(call); !strings.Contains(out, `"error": "unknown_mcp_server: math"`) || !strings.Contains(out, `"success": false`) {
		t.Fatalf("a call to math before its approval:\n%s", out)
	}

	out := w.run(`docker-compose exec -T hangar /hangar call hangar_approve '{"mcp_server": "math"}'`)
	if !strings.Contains(out, `"approved": true`) || !strings.Contains(out, `"status": "registered"`) {
		t.Fatalf("hangar_approve:\n%s", out)
	}
	served := func(out string, err error) bool { return err == nil && strings.Contains(out, `"result": 42`) }
	if out := w.run(call); !served(out, nil) {
		t.Fatalf("a call to math after its approval:\n%s", out)
	}
	w.run("docker-compose restart hangar")
	// The restarted gateway finds math again and registers it as approved.
	w.retry(call, 30*time.Second, served)
	// Served by the stack's math container, not one the gateway started.
	if n := countContainers(t, w.project, ""); n != 0 {
		t.Errorf("the gateway started %d container(s) for a discovered server", n)
	}
	w.run("docker-compose down -v")
}

// TestExampleReplicas: examples/replicas's two gateways share one
// PostgreSQL store: a server installed through one is served by the other,
// and uninstalled through that one, it is gone from the first.
func TestExampleReplicas(t *testing.T) {
	if _, err := docker.ImageInspect(t.Context(), swarmPostgresImage); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %v (make images builds it; CI=true, so this is a failure)", swarmPostgresImage, err)
		}
		t.Skipf("%s: %v (make images builds it where PostgreSQL is installed)", swarmPostgresImage, err)
	}
	port1, port2 := strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t))
	w := walkExample(t, "replicas", "127.0.0.1:8081", "127.0.0.1:"+port1, "127.0.0.1:8082", "127.0.0.1:"+port2)
	w.setenv("HANGAR_PORT_1=" + port1)
	w.setenv("HANGAR_PORT_2=" + port2)
	// The database image by its variable: a tag of this test's own.
	pgImage := w.project + "-postgres:test"
	if out, err := exec.Command("docker", "tag", swarmPostgresImage, pgImage).CombinedOutput(); err != nil {
		t.Fatalf("docker tag: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", pgImage).Run() })
	w.setenv("HANGAR_POSTGRES_IMAGE=" + pgImage)

	w.run("make images build")
	w.run("cd examples/replicas")
	w.run("mkdir -p secrets && for s in token db_password keystore_key; do head -c 32 /dev/urandom | base64 > secrets/$s; done")
	began := time.Now()
	w.run("docker-compose up -d")
	w.run("export HANGAR_TOKEN=$(cat secrets/token)")

	// Replica 1 answers once the database is up and migrated.
	out := w.retry("../../bin/hangar servers install calc.json --implicit=true --url http://127.0.0.1:8081/mcp", 60*time.Second,
		func(out string, err error) bool { return err == nil })
	if !regexp.MustCompile(`(?m)^calc\s+installed\s`).MatchString(out) || !strings.Contains(out, "status: ok") {
		t.Errorf("install through replica 1: %s", out)
	}
	installed := time.Now()
	t.Logf("installed through replica 1 %s after up", installed.Sub(began).Round(time.Millisecond))

	w.retry("../../bin/hangar servers list --url http://127.0.0.1:8082/mcp", 20*time.Second, func(out string, err error) bool {
		return err == nil && regexp.MustCompile(`(?m)^calc\s+installed\s`).MatchString(out)
	})
	t.Logf("listed by replica 2 %s after the install", time.Since(installed).Round(time.Millisecond))
	w.retry(`../../bin/hangar call --url http://127.0.0.1:8082/mcp calc__add '{"a": 20, "b": 22}'`, 20*time.Second,
		func(out string, err error) bool { return err == nil && strings.TrimSpace(out) == "42" })
	t.Logf("called through replica 2 %s after the install", time.Since(installed).Round(time.Millisecond))
	// Each replica is reached by the other at its --advertise-url: a
	// 2025-11-25 session opened on replica 1 is served through replica 2
	// (which, not holding it, would answer 404 if it could not forward).
	token, err := os.ReadFile(filepath.Join(w.dir, "secrets", "token"))
	if err != nil {
		t.Fatal(err)
	}
	c := newRawClientWith(t, "http://127.0.0.1:"+port1+"/mcp", strings.TrimSpace(string(token)))
	if !strings.HasSuffix(c.session, "~hangar-1") {
		t.Errorf("a session of replica 1 is %q, want one ending ~hangar-1", c.session)
	}
	c.url = "http://127.0.0.1:" + port2 + "/mcp"
	if tools := string(c.rpc(t, "tools/list", "{}")); !strings.Contains(tools, `"hangar_call"`) {
		t.Errorf("tools/list of replica 1's session through replica 2: %s", tools)
	}
	// Replica 2 ran calc in a container of its own.
	list, err := docker.ContainerList(t.Context(), client.ContainerListOptions{Filters: make(client.Filters).
		Add("label", "io.mcp-hangar.owner="+w.project, "io.mcp-hangar.server=calc", "io.mcp-hangar.replica=hangar-2")})
	if err != nil || len(list.Items) == 0 {
		t.Errorf("no calc container of replica hangar-2 (%v)", err)
	}
	if out, _ := w.compose("ps", "-q", "postgres"); strings.TrimSpace(out) != "" {
		info, err := docker.ContainerInspect(t.Context(), strings.TrimSpace(out), client.ContainerInspectOptions{})
		if err != nil || info.Container.Config.Image != pgImage {
			t.Errorf("the postgres service does not run $HANGAR_POSTGRES_IMAGE %s (%v)", pgImage, err)
		}
	} else {
		t.Error("no postgres container")
	}

	w.run("../../bin/hangar servers uninstall calc --url http://127.0.0.1:8082/mcp")
	uninstalled := time.Now()
	w.retry("../../bin/hangar servers list --url http://127.0.0.1:8081/mcp", 10*time.Second, func(out string, err error) bool {
		return err == nil && !strings.Contains(out, "calc")
	})
	t.Logf("uninstalled through replica 2, gone from replica 1 %s later", time.Since(uninstalled).Round(time.Millisecond))
	w.run("docker-compose down -v")
	w.run("rm -r secrets")
	if _, err := os.Stat(filepath.Join(w.dir, "secrets")); !os.IsNotExist(err) {
		t.Errorf("secrets/ after rm -r secrets: %v", err)
	}
}
