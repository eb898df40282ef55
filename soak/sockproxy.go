package soak

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// sockProxy stands between the gateways and the Docker engine's socket,
// which other users of the machine share: the engine cannot be restarted,
// but the gateways' way to it can be cut. Cut closes every open
// connection (attach streams, event streams, calls in flight) and, until
// it ends, closes each new one at once, as an engine that went away.
type sockProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	cutTill time.Time
	wg      sync.WaitGroup
}

func startSockProxy(path, target string) (*sockProxy, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// The gateways run as root in their containers, but the socket's mode
	// must not depend on that.
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, err
	}
	p := &sockProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *sockProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := time.Now().Before(p.cutTill)
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go p.pipe(c)
	}
}

func (p *sockProxy) pipe(c net.Conn) {
	defer p.wg.Done()
	up, err := net.Dial("unix", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.track(c, up, true)
	defer p.track(c, up, false)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
	c.Close()
	up.Close()
}

// closeWrite half-closes a unix connection, so that a client that has
// sent its request still reads the answer (docker's hijacked attach).
func closeWrite(c net.Conn) {
	if u, ok := c.(*net.UnixConn); ok {
		_ = u.CloseWrite()
	}
}

func (p *sockProxy) track(c, up net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		if time.Now().Before(p.cutTill) { // cut between Accept and here
			c.Close()
			up.Close()
		}
		return
	}
	delete(p.conns, c)
	delete(p.conns, up)
}

// Cut closes every open connection and refuses new ones for d.
func (p *sockProxy) Cut(d time.Duration) {
	p.mu.Lock()
	p.cutTill = time.Now().Add(d)
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// Close stops the proxy and every connection through it.
func (p *sockProxy) Close() {
	p.ln.Close()
	p.Cut(time.Hour)
	p.wg.Wait()
}
