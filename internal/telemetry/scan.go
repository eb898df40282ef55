package telemetry

import "bytes"

var (
	fieldName            = []byte("name")
	fieldURI             = []byte("uri")
	fieldProtocolVersion = []byte("protocolVersion")
	fieldMeta            = []byte("_meta")
	fieldTraceparent     = []byte("traceparent")
	fieldTracestate      = []byte("tracestate")
	fieldBaggage         = []byte("baggage")
)

// scanParams fills p from a request's params (valid JSON: the envelope
// check parsed it) by walking its bytes: the span needs three strings and
// _meta's trace context, and json.Unmarshal would scan every argument
// value and build reflection state for them, 40% of a traced request's
// SERVER span. It reports false when it cannot be sure (an escaped key or
// wanted value, params that are not an object), and the caller then
// decodes with encoding/json.
func scanParams(b []byte, p *params) bool {
	s := scanner{b: b}
	return s.object(func(key []byte) bool {
		switch {
		case bytes.EqualFold(key, fieldName):
			return s.str(&p.Name)
		case bytes.EqualFold(key, fieldURI):
			return s.str(&p.URI)
		case bytes.EqualFold(key, fieldProtocolVersion):
			return s.str(&p.ProtocolVersion)
		case bytes.EqualFold(key, fieldMeta):
			if s.peek() != '{' {
				return s.skip()
			}
			return s.object(func(key []byte) bool {
				switch {
				case bytes.EqualFold(key, fieldTraceparent):
					return s.str(&p.Meta.Traceparent)
				case bytes.EqualFold(key, fieldTracestate):
					return s.str(&p.Meta.Tracestate)
				case bytes.EqualFold(key, fieldBaggage):
					return s.str(&p.Meta.Baggage)
				}
				return s.skip()
			})
		}
		return s.skip()
	})
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// object walks an object's members, calling member with each key with
// the scanner at its value; member consumes the value.
func (s *scanner) object(member func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		key, ok := s.raw()
		if !ok || !ascii(key) || s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		if !member(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// raw reads a string with no escapes and returns its content.
func (s *scanner) raw() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	end := bytes.IndexByte(s.b[s.i+1:], '"')
	if end < 0 {
		return nil, false
	}
	v := s.b[s.i+1 : s.i+1+end]
	if bytes.IndexByte(v, '\\') >= 0 {
		return nil, false
	}
	s.i += end + 2
	return v, true
}

// str reads a wanted string value; any other JSON value leaves dst as is,
// as json.Unmarshal would fail and the caller falls back to it.
func (s *scanner) str(dst *string) bool {
	v, ok := s.raw()
	if ok {
		*dst = string(v)
	}
	return ok
}

// skip consumes one value of any kind.
func (s *scanner) skip() bool {
	switch s.peek() {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	default:
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return true
			}
			s.i++
		}
		return true
	}
}

func (s *scanner) skipString() bool {
	for j := s.i + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return true
		}
	}
	return false
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
