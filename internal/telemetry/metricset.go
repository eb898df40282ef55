package telemetry

import (
	"sync"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
)

// metricKey is what a duration series is named by.
type metricKey struct {
	client                                      bool
	method, target, transport, version, address string
	port                                        int
	errType                                     string
}

// maxSets bounds the cache: beyond it a set is built per record.
const maxSets = 4096

// setCache keeps the attribute set of each duration series: building one
// sorts and hashes its attributes, twice per call otherwise.
type setCache struct {
	mu sync.RWMutex
	m  map[metricKey]attribute.Set
}

func (c *setCache) get(k metricKey) attribute.Set {
	c.mu.RLock()
	s, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return s
	}
	s = k.set()
	c.mu.Lock()
	if c.m == nil {
		c.m = map[metricKey]attribute.Set{}
	}
	if len(c.m) < maxSets {
		c.m[k] = s
	}
	c.mu.Unlock()
	return s
}

// set is the series' attributes, as the conventions name them.
func (k metricKey) set() attribute.Set {
	_, attrs := targetAttrs(make([]attribute.KeyValue, 0, 10), k.method, k.target, k.target)
	attrs = append(attrs, semconv.NetworkTransportKey.String(k.transport))
	if k.version != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(k.version))
	}
	if k.address != "" {
		attrs = append(attrs, semconv.ServerAddress(k.address))
	}
	if k.port > 0 {
		attrs = append(attrs, semconv.ServerPort(k.port))
	}
	if k.errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(k.errType))
	}
	return attribute.NewSet(attrs...)
}
