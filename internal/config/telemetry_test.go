package config

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestTelemetryKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		yaml     string
		problems []string
		check    func(t *testing.T, c Telemetry)
	}{
		{"off by default", dockerMath, nil, func(t *testing.T, c Telemetry) {
			if c.Enabled() || c.SampleRatio != nil || c.OTLP.Protocol != "" || c.TrustRemoteSampling || c.ForwardBaggage != nil {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{"all keys", "telemetry:\n  otlp: {endpoint: \"http://otel-collector:4318\", protocol: http/protobuf, headers: {x-api-key: k}, insecure: true}\n  sample_ratio: 0.25\n", nil,
			func(t *testing.T, c Telemetry) {
				o := c.OTLP
				if !c.Enabled() || o.Endpoint != "http://otel-collector:4318" || o.Protocol != OTLPHTTP || !o.Insecure ||
					!maps.Equal(o.Headers, map[string]string{"x-api-key": "k"}) || c.SampleRatio == nil || *c.SampleRatio != 0.25 {
					t.Errorf("got %+v ratio %v", o, c.SampleRatio)
				}
			}},
		{"host:port", "telemetry: {otlp: {endpoint: \"collector:4318\", insecure: true}}\n", nil, nil},
		{"grpc is refused with the way out", "telemetry: {otlp: {endpoint: \"collector:4317\", protocol: grpc}}\n",
			[]string{"telemetry.otlp.protocol: grpc is not built into hangar: use http/protobuf (a collector takes OTLP/HTTP on port 4318)"}, nil},
		{"remote sampling and baggage", "telemetry: {trust_remote_sampling: true, forward_baggage: [tenant, user.id]}\n", nil,
			func(t *testing.T, c Telemetry) {
				if !c.TrustRemoteSampling || !slices.Equal(c.ForwardBaggage, []string{"tenant", "user.id"}) {
					t.Errorf("got %+v", c)
				}
			}},
		{"bad baggage key", "telemetry: {forward_baggage: [ok, \"no key\", \"\"], trust_remote_sampling: maybe}\n",
			[]string{`telemetry.forward_baggage[1]: must be a baggage key: letters, digits and !#$%&'*+-.^_` + "`" + `|~ (got "no key")`,
				`telemetry.forward_baggage[2]: must be a baggage key: letters, digits and !#$%&'*+-.^_` + "`" + `|~ (got "")`,
				`telemetry.trust_remote_sampling: must be true or false (got "maybe")`}, nil},
		{"ratio 0 is kept", "telemetry: {sample_ratio: 0}\n", nil, func(t *testing.T, c Telemetry) {
			if c.SampleRatio == nil || *c.SampleRatio != 0 {
				t.Errorf("ratio %v", c.SampleRatio)
			}
		}},
		{"bad protocol", "telemetry: {otlp: {protocol: http/json}}\n",
			[]string{`telemetry.otlp.protocol: must be one of http/protobuf (got "http/json")`}, nil},
		{"bad ratio", "telemetry: {sample_ratio: 1.5}\n", []string{"telemetry.sample_ratio: must be 0..1 (got 1.5)"}, nil},
		{"bad endpoint scheme", "telemetry: {otlp: {endpoint: \"ftp://c:4318\"}}\n",
			[]string{`telemetry.otlp.endpoint: must be an http:// or https:// URL, or host:port (got "ftp://c:4318")`}, nil},
		{"bad header value", "telemetry: {otlp: {headers: {a: [1]}}}\n", []string{"telemetry.otlp.headers.a: must be a string (got a list)"}, nil},
		{"unknown keys", "telemetry: {otlp: {url: x}, sampling: 1}\n",
			[]string{"telemetry.otlp.url: unknown key", "telemetry.sampling: unknown key"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(tt.yaml), nil)
			var got []string
			if err != nil {
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("error %v is not a validation error", err)
				}
				for _, p := range ve.Problems {
					got = append(got, p.String())
				}
			}
			if !slices.Equal(got, tt.problems) {
				t.Fatalf("problems:\n got %q\nwant %q", got, tt.problems)
			}
			if tt.check != nil {
				tt.check(t, c.Telemetry)
			}
		})
	}
}

// TestTelemetryFromHangarEnv: the section's keys take the loader's
// HANGAR_ overrides, as docs/observability.md says.
func TestTelemetryFromHangarEnv(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(dockerMath), []string{"HANGAR_TELEMETRY__OTLP__ENDPOINT=http://c:4318", "HANGAR_TELEMETRY__SAMPLE_RATIO=0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Telemetry.OTLP.Endpoint != "http://c:4318" || c.Telemetry.SampleRatio == nil || *c.Telemetry.SampleRatio != 0.5 {
		t.Errorf("telemetry %+v ratio %v", c.Telemetry.OTLP, c.Telemetry.SampleRatio)
	}
}

// TestTelemetryHeadersExpand: an export header's ${VAR} is read from the
// environment (or VAR_FILE), as the docs' samples show it; an unset one is
// a problem at the header's key path.
func TestTelemetryHeadersExpand(t *testing.T) {
	t.Parallel()
	const cfg = "telemetry:\n  otlp: {endpoint: \"http://c:4318\", headers: {x-api-key: \"${OTLP_KEY}\"}}\n"
	c, err := Parse([]byte(cfg), []string{"OTLP_KEY=k1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Telemetry.OTLP.Headers["x-api-key"]; got != "k1" {
		t.Errorf("x-api-key = %q, want the variable's value", got)
	}
	_, err = Parse([]byte(cfg), nil)
	if err == nil || !strings.Contains(err.Error(), "telemetry.otlp.headers.x-api-key: environment variable OTLP_KEY is not set") {
		t.Errorf("unset variable: %v", err)
	}
}
