package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcp-hangar/hangar/internal/config"
)

// collector is an OTLP/HTTP collector in the test process: it decodes
// what it is sent with the collector's own request types, and keeps the
// names of the spans and metrics and the headers it got.
type collector struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []string
	metrics map[string]*metricspb.Metric
	headers []http.Header
	// answer, when set, says what to answer the next requests instead of
	// 200 (one status per request, in order).
	answer []int
}

func newCollector(t *testing.T) *collector {
	c := &collector{metrics: map[string]*metricspb.Metric{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.headers = append(c.headers, r.Header.Clone())
		if len(c.answer) > 0 {
			code := c.answer[0]
			c.answer = c.answer[1:]
			if code != http.StatusOK {
				w.WriteHeader(code)
				return
			}
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Errorf("collector: gzip: %v", err)
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		if r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("collector: content type %q", r.Header.Get("Content-Type"))
		}
		switch r.URL.Path {
		case "/v1/traces":
			var m coltracepb.ExportTraceServiceRequest
			if err := proto.Unmarshal(b, &m); err != nil {
				t.Errorf("collector: traces: %v", err)
			}
			for _, rs := range m.GetResourceSpans() {
				for _, ss := range rs.GetScopeSpans() {
					for _, s := range ss.GetSpans() {
						c.spans = append(c.spans, s.GetName())
					}
				}
			}
		case "/v1/metrics":
			var m colmetricspb.ExportMetricsServiceRequest
			if err := proto.Unmarshal(b, &m); err != nil {
				t.Errorf("collector: metrics: %v", err)
			}
			for _, rm := range m.GetResourceMetrics() {
				for _, sm := range rm.GetScopeMetrics() {
					for _, mt := range sm.GetMetrics() {
						c.metrics[mt.GetName()] = mt
					}
				}
			}
		default:
			t.Errorf("collector: path %s", r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(c.Close)
	return c
}

// oneCall makes a SERVER and a CLIENT span and their two durations.
func oneCall(t *testing.T, tel *Telemetry) {
	ctx, op := tel.StartServer(t.Context(), ServerRequest{Method: "tools/call", Params: json.RawMessage(`{"name":"math__add"}`), Transport: TransportTCP})
	_, cop := tel.StartClient(ctx, ClientRequest{Method: "tools/call", Tool: "add", Server: "math", Transport: TransportPipe})
	cop.End()
	op.End()
}

// TestHTTPExport: spans and the MCP duration histograms reach an OTLP/HTTP
// collector, as the collector's own request types decode them, with the
// configured headers; Shutdown flushes both.
func TestHTTPExport(t *testing.T) {
	t.Parallel()
	c := newCollector(t)
	one := 1.0
	tel, err := New(t.Context(), Options{Config: config.Telemetry{SampleRatio: &one,
		OTLP: config.OTLP{Endpoint: c.URL, Headers: map[string]string{"X-Api-Key": "k1"}}}})
	if err != nil || !tel.Tracing() {
		t.Fatalf("New: %v, %v", tel, err)
	}
	oneCall(t, tel)
	sctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, want := range []string{"tools/call math__add", "tools/call add"} {
		if !strings.Contains(strings.Join(c.spans, "|"), want) {
			t.Errorf("span %q not received (got %q)", want, c.spans)
		}
	}
	for _, name := range []string{"mcp.server.operation.duration", "mcp.client.operation.duration"} {
		h := c.metrics[name].GetHistogram()
		if h == nil || len(h.DataPoints) != 1 || h.DataPoints[0].GetCount() != 1 ||
			h.AggregationTemporality != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE ||
			len(h.DataPoints[0].ExplicitBounds) != len(durationBuckets) || h.DataPoints[0].Sum == nil {
			t.Errorf("%s: got %v", name, c.metrics[name])
		}
	}
	for _, h := range c.headers {
		if h.Get("X-Api-Key") != "k1" {
			t.Errorf("export without the configured header: %v", h)
		}
	}
}

// TestGRPCRefused: gRPC export is not built in; asking for it, in the
// config or the environment, fails the start with the way out.
// Not parallel: the environment is the process's.
func TestGRPCRefused(t *testing.T) {
	_, err := New(t.Context(), Options{Config: config.Telemetry{OTLP: config.OTLP{Endpoint: "http://c:4317", Protocol: config.OTLPGRPC}}})
	if !errors.Is(err, ErrGRPC) || !strings.Contains(err.Error(), "use http/protobuf") {
		t.Errorf("config protocol grpc: %v", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	_, err = New(t.Context(), Options{Config: config.Telemetry{OTLP: config.OTLP{Endpoint: "http://c:4317"}}})
	if !errors.Is(err, ErrGRPC) {
		t.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: %v", err)
	}
}

// TestSettingsFromEnv: what the config leaves out comes from the
// OTEL_EXPORTER_OTLP_* variables, the signal's own first; a bad value is
// an error naming the variable and not echoing a header's value.
// Not parallel: the environment is the process's.
func TestSettingsFromEnv(t *testing.T) {
	vars := []string{"ENDPOINT", "TRACES_ENDPOINT", "METRICS_ENDPOINT", "HEADERS", "TRACES_HEADERS", "TIMEOUT",
		"METRICS_TIMEOUT", "COMPRESSION", "PROTOCOL", "TRACES_PROTOCOL", "CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"}
	tests := []struct {
		name    string
		cfg     config.OTLP
		env     map[string]string
		signal  string
		check   func(t *testing.T, s exportSettings)
		wantErr string
	}{
		{name: "config endpoint wins", cfg: config.OTLP{Endpoint: "http://cfg:4318", Headers: map[string]string{"a": "1"}},
			env: map[string]string{"ENDPOINT": "http://env:4318", "HEADERS": "b=2"}, signal: signalTraces,
			check: func(t *testing.T, s exportSettings) {
				if s.url != "http://cfg:4318/v1/traces" || !maps.Equal(s.headers, map[string]string{"a": "1"}) {
					t.Errorf("%+v", s)
				}
			}},
		{name: "general endpoint gets the signal's path", env: map[string]string{"ENDPOINT": "http://env:4318/"}, signal: signalMetrics,
			check: func(t *testing.T, s exportSettings) {
				if s.url != "http://env:4318/v1/metrics" || s.timeout != 10*time.Second || s.gzip {
					t.Errorf("%+v", s)
				}
			}},
		{name: "signal endpoint is used as it is", env: map[string]string{"ENDPOINT": "http://env:4318", "TRACES_ENDPOINT": "https://t/x"}, signal: signalTraces,
			check: func(t *testing.T, s exportSettings) {
				if s.url != "https://t/x" {
					t.Errorf("%+v", s)
				}
			}},
		{name: "headers, timeout, compression", signal: signalTraces,
			env: map[string]string{"ENDPOINT": "http://e", "HEADERS": "a=1", "TRACES_HEADERS": "api-key=s%20x, tenant=t", "TIMEOUT": "2500", "COMPRESSION": "gzip"},
			check: func(t *testing.T, s exportSettings) {
				if !maps.Equal(s.headers, map[string]string{"api-key": "s x", "tenant": "t"}) || s.timeout != 2500*time.Millisecond || !s.gzip {
					t.Errorf("%+v", s)
				}
			}},
		{name: "signal timeout", env: map[string]string{"ENDPOINT": "http://e", "TIMEOUT": "2500", "METRICS_TIMEOUT": "100"}, signal: signalMetrics,
			check: func(t *testing.T, s exportSettings) {
				if s.timeout != 100*time.Millisecond {
					t.Errorf("%+v", s)
				}
			}},
		{name: "signal protocol grpc", env: map[string]string{"ENDPOINT": "http://e", "TRACES_PROTOCOL": "grpc"}, signal: signalTraces,
			wantErr: "not built into hangar"},
		{name: "http/json", env: map[string]string{"ENDPOINT": "http://e", "PROTOCOL": "http/json"}, signal: signalTraces,
			wantErr: `OTLP protocol "http/json": hangar exports http/protobuf only`},
		{name: "bad headers name the variable, not the value", env: map[string]string{"ENDPOINT": "http://e", "HEADERS": "secret-token"}, signal: signalTraces,
			wantErr: "OTEL_EXPORTER_OTLP_HEADERS: want key=value pairs separated by commas"},
		{name: "bad timeout", env: map[string]string{"ENDPOINT": "http://e", "TIMEOUT": "10s"}, signal: signalTraces,
			wantErr: `OTEL_EXPORTER_OTLP_TIMEOUT: want milliseconds, a whole number above 0 (got "10s")`},
		{name: "bad compression", env: map[string]string{"ENDPOINT": "http://e", "COMPRESSION": "zstd"}, signal: signalTraces,
			wantErr: `OTEL_EXPORTER_OTLP_COMPRESSION: want gzip or none (got "zstd")`},
		{name: "bad endpoint", env: map[string]string{"TRACES_ENDPOINT": "collector:4318"}, signal: signalTraces,
			wantErr: `OTLP traces endpoint "collector:4318": want an http:// or https:// URL`},
		{name: "missing CA file", env: map[string]string{"ENDPOINT": "https://e", "CERTIFICATE": "/nonexistent/ca.pem"}, signal: signalTraces,
			wantErr: "OTEL_EXPORTER_OTLP_CERTIFICATE: open /nonexistent/ca.pem"},
		{name: "client key without certificate", env: map[string]string{"ENDPOINT": "https://e", "CLIENT_KEY": "/k.pem"}, signal: signalTraces,
			wantErr: "go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range vars {
				t.Setenv("OTEL_EXPORTER_OTLP_"+v, tt.env[v])
			}
			s, err := settingsFor(tt.signal, tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "secret-token") {
					t.Errorf("error echoes the header value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

// TestExportRetries: 429/502/503/504 are retried until the export's
// timeout, other failures are not, and a gzip body decodes.
func TestExportRetries(t *testing.T) {
	t.Parallel()
	c := newCollector(t)
	post := func(answers []int, timeout time.Duration) error {
		c.mu.Lock()
		c.answer, c.headers = answers, nil
		c.mu.Unlock()
		p := newPoster(exportSettings{url: c.URL + "/v1/metrics", timeout: timeout, gzip: true})
		p.firstRetry = time.Millisecond
		return p.post(t.Context(), &colmetricspb.ExportMetricsServiceRequest{})
	}
	if err := post([]int{503, 429, 200}, 5*time.Second); err != nil {
		t.Errorf("503, 429 then 200: %v", err)
	}
	if n := len(c.headers); n != 3 {
		t.Errorf("503, 429 then 200: %d requests, want 3", n)
	}
	if err := post([]int{400, 200}, 5*time.Second); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("400: %v", err)
	}
	if n := len(c.headers); n != 1 {
		t.Errorf("400 was retried: %d requests", n)
	}
	busy := make([]int, 1000)
	for i := range busy {
		busy[i] = 503
	}
	if err := post(busy, 200*time.Millisecond); err == nil {
		t.Error("a collector answering 503 for ever: no error")
	}
}

func TestPartialSuccess(t *testing.T) {
	t.Parallel()
	ok, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	some, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "too old"}})
	empty, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{PartialSuccess: &colmetricspb.ExportMetricsPartialSuccess{}})
	for _, tt := range []struct {
		b    []byte
		want string
	}{{nil, ""}, {ok, ""}, {some, "3 rejected: too old"}, {empty, ""}, {[]byte{0xff}, ""}, {bytes.Repeat([]byte{0x0a}, 3), ""}} {
		if got := partialSuccess(tt.b); got != tt.want {
			t.Errorf("partialSuccess(%x) = %q, want %q", tt.b, got, tt.want)
		}
	}
}

// selfSigned writes a self-signed certificate and its key as PEM files.
func selfSigned(t *testing.T, name string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kb, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile, cert
}

// TestExportTLS: OTEL_EXPORTER_OTLP_CERTIFICATE is the collector's CA, and
// OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/CLIENT_KEY the client's
// certificate for a collector that asks for one.
// Not parallel: the environment is the process's.
func TestExportTLS(t *testing.T) {
	clientCert, clientKey, client := selfSigned(t, "hangar")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	pool := x509.NewCertPool()
	pool.AddCert(client)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	_ = os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)

	post := func() error {
		s, err := settingsFor(signalTraces, config.OTLP{Endpoint: srv.URL})
		if err != nil {
			return err
		}
		p := newPoster(s)
		p.firstRetry = time.Millisecond
		return p.post(t.Context(), &coltracepb.ExportTraceServiceRequest{})
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
	if err := post(); err == nil {
		t.Error("an unknown CA was trusted")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", caFile)
	if err := post(); err == nil {
		t.Error("no client certificate, yet the collector took the export")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", clientCert)
	t.Setenv("OTEL_EXPORTER_OTLP_CLIENT_KEY", clientKey)
	if err := post(); err != nil {
		t.Errorf("CA and client certificate: %v", err)
	}
}

// TestTemporalityPreference: OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE
// picks the histograms' temporality; a bad value names the variable.
// Not parallel: the environment is the process's.
func TestTemporalityPreference(t *testing.T) {
	for _, tt := range []struct {
		value   string
		want    metricdata.Temporality
		wantErr bool
	}{
		{"", metricdata.CumulativeTemporality, false},
		{"cumulative", metricdata.CumulativeTemporality, false},
		{"delta", metricdata.DeltaTemporality, false},
		{"LowMemory", metricdata.DeltaTemporality, false},
		{"sometimes", 0, true},
	} {
		t.Setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", tt.value)
		e, err := newMetricExporter(exportSettings{url: "http://c/v1/metrics", timeout: time.Second})
		if tt.wantErr {
			if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE") {
				t.Errorf("%q: error %v", tt.value, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.value, err)
		}
		if got := e.Temporality(sdkmetric.InstrumentKindHistogram); got != tt.want {
			t.Errorf("%q: histogram temporality %v, want %v", tt.value, got, tt.want)
		}
	}
}
