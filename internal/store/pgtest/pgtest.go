// Package pgtest runs a throwaway PostgreSQL cluster for tests: initdb and
// pg_ctl from the system's packages (Debian: apt-get install postgresql),
// listening on 127.0.0.1 on a free port, with its files in a temporary
// directory. PostgreSQL refuses to run as root, so under root the cluster
// runs as the postgres user (runuser). One cluster serves a test binary
// (Shared, removed by Main from TestMain); each test takes a fresh schema
// of its own. A test that stops the server starts a cluster of its own.
//
// Without PostgreSQL the tests that need it skip, saying why; with
// CI=true they fail instead, since CI must run them.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// User and Database are the cluster's superuser and the database the
// schemas are made in.
const (
	User     = "hangar"
	Database = "hangar"
)

// Cluster is a running (or stopped) test cluster.
type Cluster struct {
	// PasswordFile holds User's password, readable by the test process.
	PasswordFile string
	Password     string
	Port         int

	bin     string // the directory of initdb, pg_ctl
	dir     string // owned by runAs: data/, the log, the socket
	runAs   string // "" when the test process may run postgres itself
	pwDir   string
	schemas atomic.Int64
}

// ErrMissing: no PostgreSQL installation was found.
var ErrMissing = errors.New("pgtest: PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or " +
	"on PATH); install it with: apt-get update && apt-get install -y postgresql")

// binDir finds the newest /usr/lib/postgresql/<v>/bin holding initdb, or
// the directory of initdb on PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	if len(dirs) > 0 {
		return filepath.Dir(dirs[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", ErrMissing
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// Start makes a new cluster and starts it; fsync follows the argument
// (off makes commits cheap for tests that do not measure them).
func Start(fsync bool) (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
	}
	if c.dir, err = os.MkdirTemp("", "hangar-pg-"); err != nil {
		return nil, err
	}
	if c.pwDir, err = os.MkdirTemp("", "hangar-pgpw-"); err != nil {
		c.Remove()
		return nil, err
	}
	c.Password = fmt.Sprintf("pw-%d-%d", os.Getpid(), time.Now().UnixNano())
	c.PasswordFile = filepath.Join(c.pwDir, "password")
	if err := os.WriteFile(c.PasswordFile, []byte(c.Password+"\n"), 0o600); err != nil {
		c.Remove()
		return nil, err
	}
	initPW := filepath.Join(c.dir, "initpw")
	if err := os.WriteFile(initPW, []byte(c.Password+"\n"), 0o600); err != nil {
		c.Remove()
		return nil, err
	}
	if err := c.own(c.dir, initPW); err != nil {
		c.Remove()
		return nil, err
	}
	if out, err := c.run("initdb", "-D", c.data(), "-U", User, "--pwfile="+initPW, "--auth-local=trust",
		"--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		c.Remove()
		return nil, fmt.Errorf("pgtest: initdb: %w: %s", err, out)
	}
	conf := fmt.Sprintf("listen_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nfsync = %v\n"+
		"max_connections = 200\nshared_buffers = 16MB\n", c.dir, fsync)
	if err := c.appendConf(conf); err != nil {
		c.Remove()
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if c.Port, err = freePort(); err != nil {
			c.Remove()
			return nil, err
		}
		if err = c.StartAgain(); err == nil {
			break
		}
		if attempt == 3 { // another process took the port between our look and postgres's bind
			c.Remove()
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		c.Remove()
		return nil, fmt.Errorf("pgtest: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+Database); err != nil {
		c.Remove()
		return nil, fmt.Errorf("pgtest: create database: %w", err)
	}
	return c, nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) appendConf(conf string) error {
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(conf)
	return errors.Join(werr, f.Close())
}

// own gives paths to the user postgres runs as.
func (c *Cluster) own(paths ...string) error {
	if c.runAs == "" {
		return nil
	}
	u, err := user.Lookup(c.runAs)
	if err != nil {
		return fmt.Errorf("pgtest: running as root needs the %s user: %w", c.runAs, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, p := range paths {
		if err := os.Chown(p, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) run(tool string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.bin, tool), args...)
	if c.runAs != "" {
		cmd = exec.Command("runuser", append([]string{"-u", c.runAs, "--", filepath.Join(c.bin, tool)}, args...)...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// StartAgain starts the cluster (after Stop) on its port and waits until
// it accepts connections.
func (c *Cluster) StartAgain() error {
	out, err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60",
		"-o", "-p "+strconv.Itoa(c.Port), "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		return fmt.Errorf("pgtest: pg_ctl start: %w: %s\n%s", err, out, tail(log))
	}
	return nil
}

// Stop stops the cluster (fast: open connections are cut, as when the
// server goes away) and waits until it is down.
func (c *Cluster) Stop() error {
	out, err := c.run("pg_ctl", "-D", c.data(), "-m", "fast", "-w", "-t", "60", "stop")
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %w: %s", err, out)
	}
	return nil
}

// Remove stops the cluster if it runs and deletes its files.
func (c *Cluster) Remove() {
	if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err == nil {
		_ = c.Stop()
	}
	_ = os.RemoveAll(c.dir)
	_ = os.RemoveAll(c.pwDir)
}

// URL is the URL of db as User, without the password (it is in
// PasswordFile), plus extra query parameters.
func (c *Cluster) URL(db string, params ...string) string {
	u := url.URL{Scheme: "postgres", User: url.User(User), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)), Path: "/" + db}
	q := url.Values{"sslmode": {"disable"}}
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	u.RawQuery = q.Encode()
	if db == "postgres" { // the admin connection of this package
		u.User = url.UserPassword(User, c.Password)
	}
	return u.String()
}

// Schema makes a new, empty schema in Database and returns the URL of
// Database with that schema first on the search path: a test's own
// database, without the cost of CREATE DATABASE.
func (c *Cluster) Schema(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t_%d", c.schemas.Add(1))
	u := c.URL(Database)
	admin, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	admin.User = url.UserPassword(User, c.Password)
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		return "", fmt.Errorf("pgtest: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", fmt.Errorf("pgtest: create schema: %w", err)
	}
	return c.URL(Database, "search_path", name), nil
}

// shared is the cluster of a test binary, started by the first test that
// asks for it.
var shared struct {
	once sync.Once
	c    *Cluster
	err  error
}

// Shared is the test binary's cluster, started on first use (with fsync
// off); it ends the test as Need does when there is none. Call Main from
// TestMain so that the cluster is removed at the end.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.once.Do(func() { shared.c, shared.err = Start(false) })
	return Need(t, shared.c, shared.err)
}

// Main runs the tests and then removes the shared cluster, if one was
// started; TestMain passes its result to os.Exit.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.c != nil {
		shared.c.Remove()
	}
	return code
}

// Need returns c, or ends the test when the cluster could not be started
// (why): skipped, or failed under CI=true.
func Need(t testing.TB, c *Cluster, why error) *Cluster {
	t.Helper()
	if c != nil {
		return c
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL is required under CI=true: %v", why)
		return nil
	}
	t.Skipf("no PostgreSQL cluster: %v", why)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return strings.TrimSpace(s)
}
