package integration

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/store/pgtest"
)

// replicaDataDir is a data directory holding the keystore key of an
// instance's replicas: every replica has the same key (one key file given
// to each), or the second is refused.
func replicaDataDir(t *testing.T, key []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, store.KeyFile), []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReplicasOnSharedStore: with a PostgreSQL store two gateways of one
// instance run at once (membership rows instead of the engine lease), and
// a live replica removes the containers of a replica whose heartbeat
// stopped, then its row.
func TestReplicasOnSharedStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c, err := pgtest.Start(false)
	c = pgtest.Need(t, c, err)
	t.Cleanup(c.Remove)
	u, err := c.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf("store: {url: %q, password_file: %q}\nmcp_servers: {}\n", u, c.PasswordFile)
	instance := newInstance(t)
	path := writeConfig(t, yaml)
	key := bytes.Repeat([]byte{5}, 32)
	for _, r := range []string{"r1", "r2"} {
		startGatewayFile(t, path, app.Options{Instance: instance, Replica: r, DataDir: replicaDataDir(t, key)})
	}

	st, err := store.OpenPostgres(store.PostgresConfig{URL: u, PasswordFile: c.PasswordFile, KeyDir: t.TempDir()}, store.Options{KeystoreKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	replicas := func() []string {
		ms, err := st.Members(ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.Replica)
		}
		return out
	}
	if got := fmt.Sprint(replicas()); got != "[r1 r2]" {
		t.Fatalf("replicas %s, want [r1 r2]", got)
	}

	// A replica on this engine that died an hour ago, and a container it
	// left.
	info, err := docker.Info(ctx, client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Heartbeat(ctx, store.Member{Instance: instance, Replica: "ghost", Engine: info.Info.ID,
		StartedAt: time.Now().Add(-2 * time.Hour), HeartbeatAt: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	created, err := docker.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: "mcp-hangar/math:dev", User: "65534:65534", Labels: map[string]string{
			dockerrt.LabelManaged: "true", dockerrt.LabelOwner: instance, dockerrt.LabelServer: "math",
			dockerrt.LabelReplica: "ghost",
		}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeContainer(t, created.ID) })
	deadline := time.Now().Add(30 * time.Second)
	for len(containers(t, instance, "")) > 0 || fmt.Sprint(replicas()) != "[r1 r2]" {
		if time.Now().After(deadline) {
			t.Fatalf("30s on: containers %s, replicas %v; want the ghost's container and row gone",
				describe(containers(t, instance, "")), replicas())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
