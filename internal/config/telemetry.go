package config

import (
	"fmt"
	"net/url"
	"strings"
)

// OTLP protocols (telemetry.otlp.protocol), spelt as OTEL_EXPORTER_OTLP_PROTOCOL
// spells them.
const (
	OTLPHTTP = "http/protobuf"
	OTLPGRPC = "grpc"
)

// Telemetry is the telemetry section: OpenTelemetry traces and metrics
// exported over OTLP. Empty (no endpoint here nor in OTEL_EXPORTER_OTLP_*)
// leaves telemetry off.
type Telemetry struct {
	OTLP OTLP
	// SampleRatio is the share of new traces recorded, 0..1; a trace the
	// client started keeps its own decision. nil: OTEL_TRACES_SAMPLER*
	// decide, else every trace is recorded.
	SampleRatio *float64
}

// OTLP is telemetry.otlp. Unset fields fall back to the standard
// OTEL_EXPORTER_OTLP_* environment variables.
type OTLP struct {
	// Endpoint is the collector's base URL (http://collector:4318), or
	// host:port for grpc.
	Endpoint string
	Protocol string // OTLPHTTP | OTLPGRPC; "" means OTLPHTTP
	// Headers go with every export (an API key): secret, never logged.
	Headers  map[string]string
	Insecure bool
}

// Enabled reports whether the config file turns telemetry on.
func (t Telemetry) Enabled() bool { return t.OTLP.Endpoint != "" }

func (d *decoder) telemetry(s *section, t *Telemetry) {
	o := s.sub("otlp")
	if o.str("endpoint", &t.OTLP.Endpoint) && t.OTLP.Endpoint != "" {
		if msg := checkOTLPEndpoint(t.OTLP.Endpoint); msg != "" {
			d.add(o.at("endpoint"), "%s", msg)
		}
	}
	o.enum("protocol", &t.OTLP.Protocol, OTLPHTTP, OTLPGRPC)
	o.strMap("headers", &t.OTLP.Headers)
	o.boolean("insecure", &t.OTLP.Insecure)
	o.finish()
	var ratio float64
	if s.floatIn("sample_ratio", &ratio, 0, 1) {
		t.SampleRatio = &ratio
	}
	s.finish()
}

// checkOTLPEndpoint accepts an http(s) URL or a bare host:port (grpc's
// usual spelling).
func checkOTLPEndpoint(e string) string {
	if !strings.Contains(e, "://") {
		if u, err := url.Parse("grpc://" + e); err != nil || u.Host == "" || u.Path != "" {
			return fmt.Sprintf("must be an http:// or https:// URL, or host:port (got %q)", e)
		}
		return ""
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("must be an http:// or https:// URL, or host:port (got %q)", e)
	}
	return ""
}
