package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mcp-hangar/hangar/internal/config"
)

// OTLP over HTTP with protobuf bodies is the one export hangar has. The
// OpenTelemetry project's OTLP exporters (otlptracehttp, otlpmetrichttp)
// import the collector's service packages, which import gRPC and
// grpc-gateway even for HTTP: about 4 MB of the binary and its resident
// text for code a gateway never runs. So the requests are posted here,
// on the SDK's own span transform (otlptrace.New takes a Client), and
// metrics are turned into their protobuf messages in otlpmetrics.go.
// TracesData and MetricsData are, field for field, the collector's
// ExportTraceServiceRequest and ExportMetricsServiceRequest, so their
// encodings are the requests' encodings.

// ErrGRPC is an OTLP protocol of grpc, from the config or from
// OTEL_EXPORTER_OTLP_*PROTOCOL: gRPC export is not built in.
var ErrGRPC = errors.New("OTLP over gRPC is not built into hangar: use http/protobuf (a collector takes OTLP/HTTP on port 4318)")

// Signals and their URL paths under a base endpoint.
const (
	signalTraces  = "TRACES"
	signalMetrics = "METRICS"
)

var signalPaths = map[string]string{signalTraces: "/v1/traces", signalMetrics: "/v1/metrics"}

// otlpEnv reads an OTEL_EXPORTER_OTLP_* setting: the signal's own
// variable first (OTEL_EXPORTER_OTLP_TRACES_HEADERS), then the general
// one (OTEL_EXPORTER_OTLP_HEADERS). It names the variable it read.
func otlpEnv(signal, name string) (value, key string) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_" + signal + "_" + name, "OTEL_EXPORTER_OTLP_" + name} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v, k
		}
	}
	return "", ""
}

// exportSettings is one signal's export: where, with what, how long.
type exportSettings struct {
	url      string
	headers  map[string]string
	gzip     bool
	timeout  time.Duration
	tls      *tls.Config // nil: the default roots
	protocol string
}

// settingsFor resolves one signal's export from the config section, and
// for what it leaves out from OTEL_EXPORTER_OTLP_* as the OpenTelemetry
// specification spells them.
func settingsFor(signal string, c config.OTLP) (exportSettings, error) {
	s := exportSettings{timeout: 10 * time.Second, protocol: c.Protocol}
	if s.protocol == "" {
		s.protocol, _ = otlpEnv(signal, "PROTOCOL")
	}
	switch s.protocol {
	case "", config.OTLPHTTP:
	case config.OTLPGRPC:
		return s, ErrGRPC
	default:
		return s, fmt.Errorf("OTLP protocol %q: hangar exports http/protobuf only", s.protocol)
	}
	switch {
	case c.Endpoint != "":
		s.url = httpURL(c, signalPaths[signal])
	default:
		if v := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT"); v != "" {
			s.url = v // the signal's own endpoint is used as it is
		} else if v := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
			s.url = strings.TrimRight(v, "/") + signalPaths[signal]
		} else {
			s.url = "http://localhost:4318" + signalPaths[signal]
		}
	}
	if u, err := url.Parse(s.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return s, fmt.Errorf("OTLP %s endpoint %q: want an http:// or https:// URL", strings.ToLower(signal), s.url)
	}
	if len(c.Headers) > 0 {
		s.headers = c.Headers
	} else if v, key := otlpEnv(signal, "HEADERS"); v != "" {
		h, err := parseOTLPHeaders(v)
		if err != nil {
			// The value may hold a key: name the variable, not its value.
			return s, fmt.Errorf("%s: %w", key, err)
		}
		s.headers = h
	}
	if v, key := otlpEnv(signal, "TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return s, fmt.Errorf("%s: want milliseconds, a whole number above 0 (got %q)", key, v)
		}
		s.timeout = time.Duration(ms) * time.Millisecond
	}
	if v, key := otlpEnv(signal, "COMPRESSION"); v != "" {
		switch v {
		case "gzip":
			s.gzip = true
		case "none":
		default:
			return s, fmt.Errorf("%s: want gzip or none (got %q)", key, v)
		}
	}
	tc, err := tlsFromEnv(signal)
	if err != nil {
		return s, err
	}
	s.tls = tc
	return s, nil
}

// parseOTLPHeaders reads the W3C-baggage-like list of
// OTEL_EXPORTER_OTLP_HEADERS: key=value pairs separated by commas, values
// percent-encoded.
func parseOTLPHeaders(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, errors.New("want key=value pairs separated by commas")
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("header %q: its value is not percent-encoded right", k)
		}
		out[k] = dec
	}
	return out, nil
}

// tlsFromEnv reads OTEL_EXPORTER_OTLP_*CERTIFICATE (the collector's CA)
// and OTEL_EXPORTER_OTLP_*CLIENT_CERTIFICATE/CLIENT_KEY (mutual TLS).
func tlsFromEnv(signal string) (*tls.Config, error) {
	ca, caKey := otlpEnv(signal, "CERTIFICATE")
	cert, certKey := otlpEnv(signal, "CLIENT_CERTIFICATE")
	key, keyKey := otlpEnv(signal, "CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caKey, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", caKey, ca)
		}
		tc.RootCAs = pool
	}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, fmt.Errorf("%s and %s go together", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_KEY")
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", certKey, keyKey, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// otlpPoster posts one signal's protobuf messages.
type otlpPoster struct {
	s      exportSettings
	client *http.Client
	// firstRetry is the wait before the first retry (tests shorten it).
	firstRetry time.Duration
}

func newPoster(s exportSettings) *otlpPoster {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if s.tls != nil {
		tr.TLSClientConfig = s.tls
	}
	return &otlpPoster{s: s, client: &http.Client{Transport: tr}, firstRetry: time.Second}
}

// maxResponseBody bounds what is read of a collector's answer.
const maxResponseBody = 64 << 10

// post sends msg, retrying while the collector says to (429, 502, 503,
// 504, or a connection that failed) until the export's timeout, as the
// OTLP/HTTP specification asks; a Retry-After is honoured.
func (p *otlpPoster) post(ctx context.Context, msg proto.Message) error {
	body, err := proto.Marshal(msg)
	if err != nil {
		return fmt.Errorf("otlp: encode: %w", err)
	}
	if p.s.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = b.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, p.s.timeout)
	defer cancel()
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval = p.firstRetry, 30*time.Second
	_, err = backoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, p.once(ctx, body) },
		backoff.WithBackOff(bo), backoff.WithMaxElapsedTime(p.s.timeout))
	return err
}

func (p *otlpPoster) once(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.s.url, bytes.NewReader(body))
	if err != nil {
		return backoff.Permanent(fmt.Errorf("otlp: %w", err))
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "hangar-otlp")
	if p.s.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range p.s.headers {
		req.Header.Set(k, v)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		var verr *tls.CertificateVerificationError
		if ctx.Err() != nil || errors.As(err, &verr) {
			return backoff.Permanent(fmt.Errorf("otlp: %w", err))
		}
		return fmt.Errorf("otlp: %w", err) // a connection that failed: retried
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		if msg := partialSuccess(answer); msg != "" {
			return backoff.Permanent(fmt.Errorf("otlp: %s: collector rejected part of the export: %s", p.s.url, msg))
		}
		return nil
	case code == http.StatusTooManyRequests || code == http.StatusBadGateway ||
		code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout:
		err := fmt.Errorf("otlp: %s: HTTP %d", p.s.url, code)
		if secs, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && secs > 0 {
			return backoff.RetryAfter(secs)
		}
		return err
	default:
		return backoff.Permanent(fmt.Errorf("otlp: %s: HTTP %d", p.s.url, code))
	}
}

// partialSuccess reads the partial_success member (field 1: rejected
// count as field 1, error message as field 2) that both the trace and
// the metric export answers have, and says what was rejected; "" when
// nothing was.
func partialSuccess(b []byte) string {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return ""
			}
			b = b[n:]
			continue
		}
		ps, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		var rejected uint64
		var message string
		for len(ps) > 0 {
			num, typ, n := protowire.ConsumeTag(ps)
			if n < 0 {
				return ""
			}
			ps = ps[n:]
			switch {
			case num == 1 && typ == protowire.VarintType:
				rejected, n = protowire.ConsumeVarint(ps)
			case num == 2 && typ == protowire.BytesType:
				var m []byte
				m, n = protowire.ConsumeBytes(ps)
				message = string(m)
			default:
				n = protowire.ConsumeFieldValue(num, typ, ps)
			}
			if n < 0 {
				return ""
			}
			ps = ps[n:]
		}
		if rejected > 0 || message != "" {
			return fmt.Sprintf("%d rejected: %s", rejected, message)
		}
	}
	return ""
}

// traceClient is otlptrace's Client over an otlpPoster.
type traceClient struct{ p *otlpPoster }

var _ otlptrace.Client = traceClient{}

func (traceClient) Start(context.Context) error { return nil }

func (c traceClient) Stop(context.Context) error {
	c.p.client.CloseIdleConnections()
	return nil
}

func (c traceClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	if len(spans) == 0 {
		return nil
	}
	return c.p.post(ctx, &tracepb.TracesData{ResourceSpans: spans})
}
