package config

import (
	"fmt"
	"net/url"
	"strings"
)

// OTLP protocols, spelt as OTEL_EXPORTER_OTLP_PROTOCOL spells them. Only
// OTLPHTTP is exported: gRPC's client would double the telemetry's share
// of the binary (docs/observability.md), so telemetry.otlp.protocol grpc
// is refused with a pointer to http/protobuf.
const (
	OTLPHTTP = "http/protobuf"
	OTLPGRPC = "grpc"
)

// Telemetry is the telemetry section: OpenTelemetry traces and metrics
// exported over OTLP. Empty (no endpoint here nor in OTEL_EXPORTER_OTLP_*)
// leaves telemetry off.
type Telemetry struct {
	OTLP OTLP
	// SampleRatio is the share of traces recorded, 0..1. nil: as
	// OTEL_TRACES_SAMPLER(_ARG) say, else every trace.
	SampleRatio *float64
	// TrustRemoteSampling lets a client's traceparent decide whether its
	// request is recorded (the sampled flag, as ParentBased does). Off
	// (the default) the gateway's own ratio decides every request; a
	// client's trace id is still continued.
	TrustRemoteSampling bool
	// ForwardBaggage are the W3C baggage keys of a client's baggage the
	// gateway passes on to providers; none by default (a client's
	// baggage is its own business, not the providers').
	ForwardBaggage []string
}

// OTLP is telemetry.otlp. Unset fields fall back to the standard
// OTEL_EXPORTER_OTLP_* environment variables.
type OTLP struct {
	// Endpoint is the collector's base URL (http://collector:4318), or
	// host:port (https, or http with Insecure).
	Endpoint string
	Protocol string // OTLPHTTP; "" means OTEL_EXPORTER_OTLP_PROTOCOL, else OTLPHTTP
	// Headers go with every export (an API key): secret, never logged.
	Headers  map[string]string
	Insecure bool
}

// Enabled reports whether the config file turns telemetry on.
func (t Telemetry) Enabled() bool { return t.OTLP.Endpoint != "" }

func (d *decoder) telemetry(s *section, t *Telemetry) {
	o := s.sub("otlp", "The OTLP exporter; what it leaves unset comes from the standard OTEL_EXPORTER_OTLP_* variables.")
	if o.str("endpoint", &t.OTLP.Endpoint,
		"The collector's base URL (http://collector:4318), or host:port.") && t.OTLP.Endpoint != "" {
		if msg := checkOTLPEndpoint(t.OTLP.Endpoint); msg != "" {
			d.add(o.at("endpoint"), "%s", msg)
		}
	}
	const protocolDoc = "http/protobuf, the only protocol built in (grpc is refused); unset: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf."
	if v, ok := o.m["protocol"].(string); ok && strings.EqualFold(v, OTLPGRPC) {
		o.def("protocol", protocolDoc, "string")
		o.reject("protocol", "grpc is not built into hangar: use http/protobuf (a collector takes OTLP/HTTP on port 4318)")
	} else {
		o.enum("protocol", &t.OTLP.Protocol, protocolDoc, OTLPHTTP)
	}
	// Headers hold API keys: ${VAR} expands, as in a server's headers.
	if o.strMap("headers", &t.OTLP.Headers, "Headers sent with every export (an API key); ${VAR} expands. Never logged.") {
		d.expandAll(o.at("headers"), t.OTLP.Headers)
	}
	o.boolean("insecure", &t.OTLP.Insecure, "Use http with an endpoint written host:port.")
	o.finish()
	ratio := 1.0
	if s.floatIn("sample_ratio", &ratio, 0, 1,
		"The share of traces recorded, 0 to 1; unset: as OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG say, else every trace.") {
		t.SampleRatio = &ratio
	}
	s.boolean("trust_remote_sampling", &t.TrustRemoteSampling,
		"Let a client's traceparent decide whether its request is recorded; false: the gateway's own ratio decides (a client's trace is still continued).")
	if s.strList("forward_baggage", &t.ForwardBaggage,
		"The W3C baggage keys of a client's baggage passed on to providers; none by default.") {
		for i, k := range t.ForwardBaggage {
			if !baggageKey(k) {
				d.add(index(s.at("forward_baggage"), i), "must be a baggage key: letters, digits and !#$%%&'*+-.^_`|~ (got %q)", k)
			}
		}
	}
	s.finish()
}

// checkOTLPEndpoint accepts an http(s) URL or a bare host:port.
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

// baggageKey reports whether k is a W3C baggage key (an RFC 7230 token).
func baggageKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", c):
		default:
			return false
		}
	}
	return true
}
