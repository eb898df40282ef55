package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// egressTestLabel marks what TestEgress creates itself (the way-out
// network, the test servers, the proxy image) so that its cleanup finds it.
const egressTestLabel = "io.mcp-hangar.test.egress"

// TestEgress: a provider with egress reaches an allowed test server (a
// container on another network) through its proxy, by name and by
// address, over plain HTTP and CONNECT; it is refused at a server not
// listed, at a direct address, at the metadata address and at a listed
// name that resolves to loopback; it has no route that bypasses the proxy:
// a listener on every address of the host, the gateway's port, another
// container are out of its reach on every address (the gateway address of
// each of its networks, docker0's, the host's, the bridge's IPv6
// link-local one).
// Refusals show in /metrics, the audit and hangar_details. A killed proxy
// is restarted by the gateway and the provider keeps working. Nothing is
// left behind.
func TestEgress(t *testing.T) {
	ctx := t.Context()
	tag := randomHex(4)
	outNet := "it-egress-out-" + tag
	createNetwork(t, outNet)
	allowedName, deniedName := "allowed-"+tag, "denied-"+tag
	allowedIP := startTestServer(t, outNet, allowedName)
	deniedIP := startTestServer(t, outNet, deniedName)
	proxyImage := buildProxyImage(t, tag)
	// The provider is this tree's egresskit (its dial_all), whatever the
	// shared mcp-hangar/egresskit:dev holds.
	kitImage := buildEgresskitImage(t, tag)

	instance := newInstance(t)
	// Registered before the gateway's own cleanup, so it runs after it:
	// once the gateway is closed, none of its egress networks is left.
	t.Cleanup(func() {
		if left := egressNetworks(t, instance); len(left) > 0 {
			t.Errorf("after app.Close, egress networks of %s remain: %v", instance, left)
			for _, n := range left {
				_, _ = docker.NetworkRemove(context.Background(), n, client.NetworkRemoveOptions{})
			}
		}
	})
	g := startGatewayAs(t, instance, fmt.Sprintf(`
egress_proxy: {image: %q, network: %q}
mcp_servers:
  kit:
    mode: docker
    image: %q
    start_timeout_s: 60
    egress:
      allow:
        - "%s:8080"
        - "%s:8080"
        - "ip6-localhost:8080"
`, proxyImage, outNet, kitImage, allowedName, allowedIP))
	s := connect(t, g.MCPURL)

	fetch := func(t *testing.T, url string) (bool, string) {
		t.Helper()
		r := s.callOne(t, "kit", "fetch", map[string]any{"url": url})
		return r["success"] == true, fmt.Sprint(r["result"], " ", r["error"])
	}

	allowedURL := "http://" + allowedName + ":8080/"
	cases := []struct {
		name     string
		url      string
		wantOK   bool
		contains string
		refused  string // the host the refusal names
	}{
		{name: "allowed by name", url: allowedURL, wantOK: true, contains: "200 egresskit " + allowedName},
		{name: "allowed by address", url: "http://" + allowedIP + ":8080/", wantOK: true, contains: "200 egresskit " + allowedName},
		// A tunnel to a plain HTTP server: the TLS handshake fails on the
		// far side's HTTP answer, which proves the tunnel was open.
		{name: "CONNECT allowed", url: "https://" + allowedName + ":8080/", contains: "HTTP response to HTTPS client"},
		{name: "server not listed", url: "http://" + deniedName + ":8080/", wantOK: true, contains: "403", refused: deniedName},
		{name: "CONNECT to a server not listed", url: "https://" + deniedName + ":8080/", contains: "Forbidden", refused: deniedName},
		{name: "direct address not listed", url: "http://" + deniedIP + ":8080/", wantOK: true, contains: "403", refused: deniedIP},
		{name: "metadata address", url: "http://169.254.169.254/latest/meta-data/", wantOK: true, contains: "403", refused: "169.254.169.254"},
		{name: "listed name resolving to loopback", url: "http://ip6-localhost:8080/", wantOK: true, contains: "403", refused: "ip6-localhost"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, text := fetch(t, tc.url)
			t.Logf("fetch %s: %v %s", tc.url, ok, text)
			if ok != tc.wantOK || !strings.Contains(text, tc.contains) {
				t.Fatalf("fetch %s = %v %q, want success %v and %q", tc.url, ok, text, tc.wantOK, tc.contains)
			}
			if tc.refused != "" && tc.wantOK && !strings.Contains(text, "refused") {
				t.Errorf("the 403 does not say the proxy refused: %q", text)
			}
		})
	}

	t.Run("no route around the proxy", func(t *testing.T) {
		r := s.callOne(t, "kit", "dial", map[string]any{"addr": allowedIP + ":8080"})
		text := fmt.Sprint(r["result"], " ", r["error"])
		if r["success"] == true || !strings.Contains(text, "dial failed") {
			t.Fatalf("a direct connection to %s:8080 = %q, want it to fail", allowedIP, text)
		}
		if !strings.Contains(text, "unreachable") && !strings.Contains(text, "timeout") {
			t.Logf("direct dial failed with: %s", text)
		}
	})

	t.Run("nothing but the proxy", func(t *testing.T) {
		// A listener on every address of the host (0.0.0.0 and ::), and
		// the gateway's own port: the provider must reach neither on any
		// address of the host, nor another container, directly.
		ln, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte("host\n"))
				_ = c.Close()
			}
		}()
		// The allowed name through the proxy works (and the provider runs).
		if ok, text := fetch(t, allowedURL); !ok || !strings.Contains(text, "200 egresskit "+allowedName) {
			t.Fatalf("through the proxy, the allowed name = %v %q", ok, text)
		}
		ports := []string{strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), g.URL[strings.LastIndex(g.URL, ":")+1:]}
		other := startTestServer(t, "bridge", "other-"+tag)
		targets := map[string]bool{allowedIP + ":8080": true, other + ":8080": true}
		for _, a := range hostAddresses(t, providerOf(t, instance, "kit")) {
			for _, p := range ports {
				targets[net.JoinHostPort(a, p)] = true
			}
		}
		addrs := slices.Sorted(maps.Keys(targets))
		r := s.callOne(t, "kit", "dial_all", map[string]any{"addrs": addrs})
		text := fmt.Sprint(r["result"], " ", r["error"])
		t.Logf("dial_all from the provider:\n%s", text)
		for _, line := range strings.Split(text, "\n") {
			// "connection refused" is an answer too: something at that
			// address heard the provider.
			if !strings.Contains(line, " dial failed") || strings.Contains(line, "connection refused") {
				t.Errorf("the provider reached it directly: %s", line)
			}
		}
		if n := strings.Count(text, " dial failed"); n != len(addrs) {
			t.Errorf("%d of %d addresses failed", n, len(addrs))
		}
	})

	t.Run("refusals in metrics, audit and details", func(t *testing.T) {
		metrics := httpGet(t, g.URL+"/metrics")
		for _, host := range []string{deniedName, deniedIP, "169.254.169.254"} {
			want := fmt.Sprintf(`hangar_egress_refused_total{host=%q,mcp_server="kit",reason="not_allowed"}`, host)
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics has no %s", want)
			}
		}
		if want := `hangar_egress_refused_total{host="ip6-localhost",mcp_server="kit",reason="forbidden_address"}`; !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
		d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": "kit"})
		eg, _ := d["egress"].(map[string]any)
		if eg == nil {
			t.Fatalf("hangar_details has no egress: %v", d)
		}
		if got := stringList(eg["allow"]); len(got) != 3 {
			t.Errorf("egress.allow = %v", got)
		}
		refusals := fmt.Sprint(eg["recent_refusals"])
		for _, want := range []string{deniedName + ":8080", deniedIP + ":8080", "169.254.169.254:80", "ip6-localhost:8080", "forbidden_address"} {
			if !strings.Contains(refusals, want) {
				t.Errorf("egress.recent_refusals = %s, want %s in it", refusals, want)
			}
		}
		audit := fmt.Sprint(d["recent_audit"])
		if !strings.Contains(audit, "action:egress") || !strings.Contains(audit, deniedName+":8080") {
			t.Errorf("recent_audit has no egress refusal of %s: %s", deniedName, audit)
		}
	})

	t.Run("the proxy survives a crash", func(t *testing.T) {
		old := proxyContainers(t, instance)
		if len(old) != 1 {
			t.Fatalf("%d egress proxies running, want 1", len(old))
		}
		if got := old[0].Labels[dockerrt.LabelServer]; got != "kit" {
			t.Errorf("the proxy serves %q, want kit", got)
		}
		if _, err := docker.ContainerKill(ctx, old[0].ID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			now := proxyContainers(t, instance)
			if len(now) == 1 && now[0].ID != old[0].ID && now[0].State == "running" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no new proxy within 60s of the kill: %v", describe(now))
			}
			time.Sleep(50 * time.Millisecond)
		}
		// The new proxy is ready once its alias answers; the provider
		// itself was never restarted.
		for {
			ok, text := fetch(t, allowedURL)
			if ok && strings.Contains(text, "200 egresskit "+allowedName) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the provider cannot reach the allowed server after the proxy restart: %s", text)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if ok, text := fetch(t, "http://"+deniedName+":8080/"); !ok || !strings.Contains(text, "403") {
			t.Errorf("after the restart, the denied server = %v %q, want 403", ok, text)
		}
		d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": "kit"})
		eg, _ := d["egress"].(map[string]any)
		proxy, _ := eg["proxy"].(map[string]any)
		if proxy["restarts"] != float64(1) || str(proxy, "container_id") == "" || !strings.HasPrefix(str(proxy, "network"), "hangar-egress-") {
			t.Errorf("hangar_details egress.proxy after one restart = %v", proxy)
		}
		if n := countContainers(t, instance, "kit"); n != 2 {
			t.Errorf("%d containers of kit (provider + proxy), want 2", n)
		}
	})

	t.Run("stop removes the proxy and network, a start brings them back", func(t *testing.T) {
		s.mustCall(t, "hangar_stop", map[string]any{"mcp_server": "kit"})
		deadline := time.Now().Add(60 * time.Second)
		for len(proxyContainers(t, instance)) > 0 || len(egressNetworks(t, instance)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("60s after hangar_stop: proxies %v, networks %v", describe(proxyContainers(t, instance)), egressNetworks(t, instance))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if ok, text := fetch(t, allowedURL); !ok || !strings.Contains(text, "200 egresskit "+allowedName) {
			t.Fatalf("after a stop and a new start: %v %q", ok, text)
		}
		if n := len(egressNetworks(t, instance)); n != 1 {
			t.Errorf("%d egress networks after the new start, want 1", n)
		}
	})
}

func createNetwork(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := docker.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: map[string]string{egressTestLabel: "true"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := docker.NetworkRemove(ctx, name, client.NetworkRemoveOptions{}); err != nil {
			t.Errorf("remove network %s: %v", name, err)
		}
	})
}

// startTestServer runs egresskit's HTTP server as name on net and returns
// its address there.
func startTestServer(t *testing.T, net, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created, err := docker.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       name,
		Config:     &container.Config{Image: "mcp-hangar/egresskit:dev", Cmd: []string{"serve", name}, Labels: map[string]string{egressTestLabel: "true"}},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(net), CapDrop: []string{"ALL"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = docker.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})
	})
	if _, err := docker.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := docker.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep := res.Container.NetworkSettings.Networks[net]
	if ep == nil || !ep.IPAddress.IsValid() {
		t.Fatalf("test server %s has no address on %s", name, net)
	}
	return ep.IPAddress.String()
}

// buildProxyImage builds an image around this run's hangar binary, so
// the proxy is the code under test whatever mcp-hangar/gateway:dev holds.
func buildProxyImage(t *testing.T, tag string) string {
	t.Helper()
	dir := t.TempDir()
	bin, err := os.ReadFile(hangarBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hangar"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	dockerfile := "FROM scratch\nCOPY hangar /hangar\nENTRYPOINT [\"/hangar\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	image := "hangar-egress-it:" + tag
	cmd := exec.Command("docker", "build", "-q", "--label", egressTestLabel+"=true", "-t", image, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = docker.ImageRemove(ctx, image, client.ImageRemoveOptions{Force: true})
	})
	return image
}

// buildEgresskitImage builds egresskit from this tree into an image of
// its own tag, FROM scratch.
func buildEgresskitImage(t *testing.T, tag string) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "egresskit"), "./images/egresskit")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build egresskit: %v\n%s", err, out)
	}
	dockerfile := "FROM scratch\nCOPY egresskit /egresskit\nUSER 65534:65534\nENTRYPOINT [\"/egresskit\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	image := "hangar-egresskit-it:" + tag
	cmd := exec.Command("docker", "build", "-q", "--label", egressTestLabel+"=true", "-t", image, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = docker.ImageRemove(ctx, image, client.ImageRemoveOptions{Force: true})
	})
	return image
}

// proxyContainers lists the egress proxies of owner.
func proxyContainers(t *testing.T, owner string) []container.Summary {
	t.Helper()
	var out []container.Summary
	for _, c := range containers(t, owner, "") {
		if c.Labels[dockerrt.LabelRole] == dockerrt.RoleEgressProxy {
			out = append(out, c)
		}
	}
	return out
}

// egressNetworks lists the managed networks of owner.
func egressNetworks(t *testing.T, owner string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := docker.NetworkList(ctx, client.NetworkListOptions{
		Filters: make(client.Filters).Add("label", dockerrt.LabelManaged+"=true", dockerrt.LabelOwner+"="+owner),
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	return out
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEgressConfigCheck: hangar config check reports an egress that cannot
// work (a network that contradicts it, an HTTP provider the gateway could
// not reach, a way-out network or proxy image the engine lacks) at its key
// path, and passes one that can.
func TestEgressConfigCheck(t *testing.T) {
	tag := randomHex(4)
	bad := writeConfig(t, `
egress_proxy: {image: "hangar-egress-it-missing:`+tag+`", network: "it-egress-missing-`+tag+`"}
mcp_servers:
  netted:
    mode: docker
    image: mcp-hangar/egresskit:dev
    network: bridge
    egress: {allow: [api.github.com:443]}
  webby:
    mode: docker
    image: mcp-hangar/egresskit:dev
    transport: http
    egress: {allow: [api.github.com:443]}
`)
	out, err := exec.Command(hangarBin, "config", "check", bad).CombinedOutput()
	t.Logf("hangar config check:\n%s", out)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	for _, want := range []string{
		"mcp_servers.netted.network: cannot be used with egress",
		"mcp_servers.webby.transport: http cannot be used with egress",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}

	engine := writeConfig(t, `
egress_proxy: {image: "hangar-egress-it-missing:`+tag+`", network: "it-egress-missing-`+tag+`"}
mcp_servers:
  kit:
    mode: docker
    image: mcp-hangar/egresskit:dev
    egress: {allow: [api.github.com:443]}
`)
	out, err = exec.Command(hangarBin, "config", "check", engine).CombinedOutput()
	t.Logf("hangar config check:\n%s", out)
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	for _, want := range []string{"egress_proxy.image: image hangar-egress-it-missing:" + tag, "egress_proxy.network: network it-egress-missing-" + tag} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}

	good := writeConfig(t, `
mcp_servers:
  kit:
    mode: docker
    image: mcp-hangar/egresskit:dev
    egress: {allow: [api.github.com:443]}
`)
	if out, err := exec.Command(hangarBin, "config", "check", good).CombinedOutput(); err != nil || !strings.Contains(string(out), "ok (1 MCP servers)") {
		t.Errorf("clean config: %v\n%s", err, out)
	}
}

// providerOf is the provider container of server (not its proxy).
func providerOf(t *testing.T, owner, server string) container.Summary {
	t.Helper()
	for _, c := range containers(t, owner, server) {
		if c.Labels[dockerrt.LabelRole] == "" {
			return c
		}
	}
	t.Fatalf("no provider container of %s", server)
	return container.Summary{}
}

// hostAddresses are the addresses a container c could try to reach the
// host at: the gateway address of each of its networks, the default
// bridge's (docker0), every address of the host's interfaces, and the
// IPv6 link-local address of each of c's networks' bridges (as c would
// dial it, on its eth0).
func hostAddresses(t *testing.T, c container.Summary) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), dockerTimeout)
	defer cancel()
	info, err := docker.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	add := func(a string) {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	nets := []string{"bridge"}
	for name := range info.Container.NetworkSettings.Networks {
		nets = append(nets, name)
	}
	for _, name := range nets {
		nw, err := docker.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range nw.Network.IPAM.Config {
			if cfg.Gateway.IsValid() {
				add(cfg.Gateway.String())
			}
		}
		if name == "bridge" {
			continue
		}
		// The bridge of the container's own network, by the engine's
		// naming (br-<id>): its link-local address, zoned as the
		// container sees its side of the link.
		if br, err := net.InterfaceByName("br-" + nw.Network.ID[:12]); err == nil {
			addrs, _ := br.Addrs()
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsLinkLocalUnicast() && ipn.IP.To4() == nil {
					add(ipn.IP.String() + "%eth0")
				}
			}
		}
	}
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ifaddrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		add(ipn.IP.String())
	}
	return out
}
