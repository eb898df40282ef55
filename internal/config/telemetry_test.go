package config

import (
	"errors"
	"maps"
	"slices"
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
			if c.Enabled() || c.SampleRatio != nil || c.OTLP.Protocol != "" {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{"all keys", "telemetry:\n  otlp: {endpoint: \"http://otel-collector:4318\", protocol: grpc, headers: {x-api-key: k}, insecure: true}\n  sample_ratio: 0.25\n", nil,
			func(t *testing.T, c Telemetry) {
				o := c.OTLP
				if !c.Enabled() || o.Endpoint != "http://otel-collector:4318" || o.Protocol != OTLPGRPC || !o.Insecure ||
					!maps.Equal(o.Headers, map[string]string{"x-api-key": "k"}) || c.SampleRatio == nil || *c.SampleRatio != 0.25 {
					t.Errorf("got %+v ratio %v", o, c.SampleRatio)
				}
			}},
		{"host:port for grpc", "telemetry: {otlp: {endpoint: \"collector:4317\", protocol: grpc}}\n", nil, nil},
		{"ratio 0 is kept", "telemetry: {sample_ratio: 0}\n", nil, func(t *testing.T, c Telemetry) {
			if c.SampleRatio == nil || *c.SampleRatio != 0 {
				t.Errorf("ratio %v", c.SampleRatio)
			}
		}},
		{"bad protocol", "telemetry: {otlp: {protocol: http/json}}\n",
			[]string{`telemetry.otlp.protocol: must be one of http/protobuf, grpc (got "http/json")`}, nil},
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
