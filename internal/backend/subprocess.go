package backend

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// processStopGrace is how long a subprocess gets after EOF on stdin and
// then after SIGTERM before it is killed.
const processStopGrace = 2 * time.Second

// processBackend is a provider run as a child process (mode subprocess), for
// a gateway on a host; it speaks MCP over the child's stdin/stdout.
type processBackend struct {
	cmd *exec.Cmd
	mcpSide
	stderr *dockerrt.Tail
	done   chan struct{}
	exit   string
	once   sync.Once
}

func launchSubprocess(ctx context.Context, s *config.Server) (*processBackend, error) {
	if len(s.Command) == 0 {
		return nil, errors.New("mode subprocess needs a command")
	}
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		cmd.Env = append(cmd.Env, k+"="+s.Env[k])
	}
	// Its own process group, so a stop reaches its children too; and it
	// dies with the gateway instead of outliving it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	b := &processBackend{cmd: cmd, stderr: dockerrt.NewTail(16 << 10), done: make(chan struct{})}
	cmd.Stderr = b.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Command[0], err)
	}
	go b.wait()
	conn, err := mcpconn.Connect(ctx, mcpconn.Stdio(stdout, stdin), s.Protocol)
	if err != nil {
		t := time.NewTimer(exitWait)
		defer t.Stop()
		select {
		case <-b.done:
			return nil, fmt.Errorf("process exited during start (%s)%s", b.exit, tailSuffix(b.stderr))
		case <-t.C:
		}
		_ = b.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("MCP handshake: %w%s", err, tailSuffix(b.stderr))
	}
	b.conn = conn
	return b, nil
}

func (b *processBackend) wait() {
	err := b.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		b.exit = "exit 0"
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			b.exit = "signal " + ws.Signal().String()
		} else {
			b.exit = fmt.Sprintf("exit %d", ee.ExitCode())
		}
	default:
		b.exit = err.Error()
	}
	close(b.done)
}

func tailSuffix(t *dockerrt.Tail) string {
	if s := t.LastLines(5); s != "" {
		return "; stderr: " + s
	}
	return ""
}

func (b *processBackend) ListTools(ctx context.Context) ([]mcpconn.Tool, error) {
	return b.conn.ListTools(ctx)
}

func (b *processBackend) CallTool(ctx context.Context, name string, args any, o *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	return b.conn.CallTool(ctx, name, args, o)
}

func (b *processBackend) Done() <-chan struct{} { return b.done }
func (b *processBackend) Exit() string          { return b.exit }
func (b *processBackend) Stderr() string        { return b.stderr.String() }
func (b *processBackend) ContainerID() string   { return "" }

// Stop closes stdin (a stdio server exits on EOF), then SIGTERMs the
// process group, then SIGKILLs it.
func (b *processBackend) Stop(ctx context.Context) error {
	b.once.Do(func() {
		if b.conn != nil {
			_ = b.conn.Close()
		}
		pg := -b.cmd.Process.Pid
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			t := time.NewTimer(processStopGrace)
			select {
			case <-b.done:
				t.Stop()
				return
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			_ = syscall.Kill(pg, sig)
		}
	})
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
