package egress

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"sync"
	"time"
)

// Proxy is the forward proxy of one server: CONNECT tunnels and plain
// HTTP requests in absolute form, each only to what its Guard allows.
type Proxy struct {
	Guard *Guard
	// Refused is told of every refusal (the proxy's command writes it to
	// stdout for the gateway); nil ignores them.
	Refused func(Refusal)
	Log     *slog.Logger // nil: slog.Default()
	// Clients, when set, are the only source ranges served: the server's
	// internal network, so that nothing on the way-out network can use
	// the proxy as its own way to the server's hosts.
	Clients []netip.Prefix

	once sync.Once
	fwd  *httputil.ReverseProxy
}

func (p *Proxy) log() *slog.Logger {
	if p.Log == nil {
		return slog.Default()
	}
	return p.Log
}

func (p *Proxy) init() {
	p.once.Do(func() {
		tr := &http.Transport{
			// Every connection is the guard's: allowed, resolved by the
			// proxy, the checked address dialled.
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				return p.Guard.Dial(ctx, addr)
			},
			// The provider asked this proxy; it must not pass the request
			// on to another one from the proxy's own environment.
			Proxy:                 nil,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: 5 * time.Minute,
		}
		p.fwd = &httputil.ReverseProxy{
			// The request is already absolute; nothing is added (no
			// X-Forwarded-For: the far side learns nothing of the inside).
			// The Host header is the URL's host, the one that was
			// allowed (net/http already prefers it over a Host header in
			// absolute form); another would ask a shared front end (a CDN)
			// for a site not on the list.
			Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.Host = "" },
			Transport: tr,
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				p.fail(w, err)
			},
		}
	})
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.init()
	if !p.client(r.RemoteAddr) {
		p.log().Warn("egress proxy used from outside its network", "remote", r.RemoteAddr)
		http.Error(w, "hangar egress: not a client of this proxy", http.StatusForbidden)
		return
	}
	switch {
	case r.Method == http.MethodConnect:
		p.connect(w, r)
	case r.URL.IsAbs() && r.URL.Scheme == "http" && r.URL.Host != "":
		if r.URL.Port() == "" {
			r.URL.Host = net.JoinHostPort(r.URL.Hostname(), "80")
		}
		p.fwd.ServeHTTP(w, r)
	case r.URL.IsAbs():
		// https:// in absolute form would need the proxy to speak TLS for
		// the provider; clients use CONNECT for it.
		http.Error(w, "hangar egress: only http:// URLs are proxied as requests; use CONNECT for https", http.StatusBadRequest)
	default:
		http.Error(w, "hangar egress: this is a forward proxy; send absolute http:// URLs or CONNECT", http.StatusBadRequest)
	}
}

func (p *Proxy) client(remote string) bool {
	if len(p.Clients) == 0 {
		return true
	}
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, c := range p.Clients {
		if c.Contains(a) {
			return true
		}
	}
	return false
}

func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	upstream, err := p.Guard.Dial(r.Context(), r.Host)
	if err != nil {
		p.fail(w, err)
		return
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = upstream.Close()
		http.Error(w, "hangar egress: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = conn.Close()
		_ = upstream.Close()
		return
	}
	splice(conn, buf.Reader, upstream)
}

// splice copies both ways until either side is done, then closes both;
// bytes the client sent along with its CONNECT are in buffered.
func splice(client net.Conn, buffered io.Reader, upstream net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(upstream, io.MultiReader(buffered, client))
		closeWrite(upstream)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		closeWrite(client)
		done <- struct{}{}
	}()
	<-done
	<-done
	_ = client.Close()
	_ = upstream.Close()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// fail answers a request the proxy did not carry out: 403 for a refusal
// (reported), 502 when the allowed target could not be reached.
func (p *Proxy) fail(w http.ResponseWriter, err error) {
	if ref, ok := AsRefusal(err); ok {
		p.log().Warn("egress refused", "host", ref.Host, "port", ref.Port, "reason", ref.Reason)
		if p.Refused != nil {
			p.Refused(*ref)
		}
		http.Error(w, "hangar "+ref.Error(), http.StatusForbidden)
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	p.log().Info("egress upstream failed", "error", err)
	http.Error(w, "hangar egress: upstream unreachable", http.StatusBadGateway)
}

// Serve runs the proxy on ln until ctx ends.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		// Tunnels live as long as their traffic; no write deadline.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(p.log().Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}
