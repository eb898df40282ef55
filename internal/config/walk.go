package config

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The walker reads koanf's Raw() map by hand instead of using mapstructure
// so that every problem carries its exact key path and a message that says
// which rule was broken. Values set through HANGAR_ environment variables
// arrive as strings, so every scalar helper also accepts a string form.

// decoder collects problems while the config is walked.
type decoder struct {
	problems []Problem
	lookup   func(string) (string, bool) // for ${VAR} expansion
	tr       *tracer                     // nil but in Keys
}

func (d *decoder) add(path, format string, args ...any) {
	p := Problem{Path: path, Message: fmt.Sprintf(format, args...)}
	d.problems = append(d.problems, p)
	if d.tr != nil {
		d.tr.problem(p.Path, p.Message)
	}
}

// section is one YAML mapping being decoded. Keys are removed as they are
// read, so whatever is left at finish() is an unknown key.
type section struct {
	d    *decoder
	path string
	m    map[string]any
	t    *sectionTrace // nil but while Keys traces the walk
}

// section returns the mapping at path; a missing (nil) value is an empty
// mapping so that callers need no nil checks and defaults stay in place.
func (d *decoder) section(path string, v any) *section {
	s := &section{d: d, path: path, m: map[string]any{}}
	if v == nil {
		return s
	}
	m, ok := asMap(v)
	if !ok {
		d.add(path, "must be a mapping (got %s)", got(v))
		return s
	}
	for k, val := range m {
		s.m[k] = val
	}
	return s
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, val := range m {
			out[fmt.Sprint(k)] = val
		}
		return out, true
	}
	return nil, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func (s *section) at(key string) string { return join(s.path, key) }

// take consumes key; ok is false when it is absent or null, which YAML
// users write to mean "use the default".
func (s *section) take(key string) (v any, ok bool) {
	v, present := s.m[key]
	delete(s.m, key)
	return v, present && v != nil
}

func (s *section) has(key string) bool {
	v, ok := s.m[key]
	return ok && v != nil
}

// reject consumes key and reports why it may not be used here.
func (s *section) reject(key, format string, args ...any) {
	delete(s.m, key)
	s.d.add(s.at(key), format, args...)
}

func (s *section) finish() {
	if k := s.node(); k != nil {
		k.Closed = true
	}
	for _, k := range sortedKeys(s.m) {
		s.d.add(s.at(k), "unknown key")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sub is the mapping at key.
func (s *section) sub(key, doc string) *section {
	v, _ := s.take(key)
	return s.child(s.d.section(s.at(key), v), key, s.def(key, doc, "object"))
}

// list returns the elements of a YAML sequence at key; ok is false when
// the key is absent or not a list (which is reported). An element that
// is a mapping is read from s.item.
func (s *section) list(key, doc string) (items []any, ok bool) {
	s.def(key, doc, "array")
	v, present := s.take(key)
	if !present {
		return nil, false
	}
	l, isList := v.([]any)
	if !isList {
		s.d.add(s.at(key), "must be a list (got %s)", got(v))
	}
	return l, isList
}

func (s *section) intIn(key string, dst *int, lo, hi int, doc string) bool {
	if k := s.def(key, doc, "integer"); k != nil {
		k.Min, k.Max = bound(lo), bound(hi)
		s.setDefault(k, key, *dst)
	}
	v, ok := s.take(key)
	if !ok {
		return false
	}
	n, ok := toInt(v)
	if !ok {
		s.d.add(s.at(key), "must be an integer (got %s)", got(v))
		return false
	}
	if n < lo || n > hi {
		s.d.add(s.at(key), "must be %d..%d (got %d)", lo, hi, n)
		return false
	}
	*dst = n
	return true
}

func (s *section) floatIn(key string, dst *float64, lo, hi float64, doc string) bool {
	if k := s.def(key, doc, "number"); k != nil {
		k.Min, k.Max = bound(lo), bound(hi)
		s.setDefault(k, key, *dst)
	}
	v, ok := s.take(key)
	if !ok {
		return false
	}
	f, ok := toFloat(v)
	if !ok {
		s.d.add(s.at(key), "must be a number (got %s)", got(v))
		return false
	}
	if !(f >= lo && f <= hi) { // also rejects NaN
		s.d.add(s.at(key), "must be %s..%s (got %s)", num(lo), num(hi), num(f))
		return false
	}
	*dst = f
	return true
}

// seconds reads a number of seconds, the unit the Python config uses.
func (s *section) seconds(key string, dst *time.Duration, lo, hi float64, doc string) {
	if k := s.def(key, doc, "number"); k != nil {
		k.Min, k.Max, k.Unit = bound(lo), bound(hi), unitSeconds
		s.setDefault(k, key, *dst)
	}
	v, ok := s.take(key)
	if !ok {
		return
	}
	f, ok := toFloat(v)
	if !ok {
		s.d.add(s.at(key), "must be a number of seconds (got %s)", got(v))
		return
	}
	if !(f >= lo && f <= hi) {
		s.d.add(s.at(key), "must be %s..%s (got %s)", num(lo), num(hi), num(f))
		return
	}
	*dst = time.Duration(math.Round(f * float64(time.Second)))
}

func (s *section) boolean(key string, dst *bool, doc string) {
	s.setDefault(s.def(key, doc, "boolean"), key, *dst)
	v, ok := s.take(key)
	if !ok {
		return
	}
	b, ok := toBool(v)
	if !ok {
		s.d.add(s.at(key), "must be true or false (got %s)", got(v))
		return
	}
	*dst = b
}

// str reads a string; YAML's numbers and booleans are taken as written
// (user: 1000). opts are what the caller checks of it.
func (s *section) str(key string, dst *string, doc string, opts ...opt) bool {
	if k := s.def(key, doc, "string", "number", "boolean"); k != nil {
		for _, o := range opts {
			o.apply(k)
		}
		s.setDefault(k, key, *dst)
	}
	v, ok := s.take(key)
	if !ok {
		return false
	}
	str, ok := toStr(v)
	if !ok {
		s.d.add(s.at(key), "must be a string (got %s)", got(v))
		return false
	}
	*dst = str
	return true
}

// enum matches case-insensitively and stores the canonical spelling, so
// "Docker" and HANGAR_LOGGING__LEVEL=debug both work.
func (s *section) enum(key string, dst *string, doc string, allowed ...string) bool {
	if k := s.def(key, doc, "string"); k != nil {
		k.Enum = slices.Clone(allowed)
		s.setDefault(k, key, *dst)
	}
	v, ok := s.take(key)
	if !ok {
		return false
	}
	str, _ := toStr(v)
	for _, a := range allowed {
		if strings.EqualFold(str, a) {
			*dst = a
			return true
		}
	}
	s.d.add(s.at(key), "must be one of %s (got %s)", strings.Join(allowed, ", "), got(v))
	return false
}

// strList reads a list of strings; opts are what the caller checks of
// each.
func (s *section) strList(key string, dst *[]string, doc string, opts ...opt) bool {
	if k := s.def(key, doc, "array"); k != nil {
		it := k.items("string", "number", "boolean")
		for _, o := range opts {
			o.apply(it)
		}
		s.setDefault(k, key, *dst)
	}
	v, ok := s.take(key)
	if !ok {
		return false
	}
	l, ok := s.d.strings(s.at(key), v)
	if ok {
		*dst = l
	}
	return ok
}

// strings converts a YAML sequence of scalars; an empty list becomes nil so
// that configs compare equal however an empty list was written.
func (d *decoder) strings(path string, v any) ([]string, bool) {
	l, isList := v.([]any)
	if !isList {
		d.add(path, "must be a list of strings (got %s)", got(v))
		return nil, false
	}
	var out []string
	ok := true
	for i, e := range l {
		str, isStr := toStr(e)
		if !isStr || e == nil {
			d.add(index(path, i), "must be a string (got %s)", got(e))
			ok = false
			continue
		}
		out = append(out, str)
	}
	return out, ok
}

// strMap reads a mapping of strings; scalar values are stringified because
// `DEBUG: 1` in an env: map obviously means "1".
func (s *section) strMap(key string, dst *map[string]string, doc string) bool {
	if k := s.def(key, doc, "object"); k != nil {
		if k.Entry == nil {
			k.Entry = &keyDef{}
		}
		k.Entry.addTypes("string", "number", "boolean")
		s.setDefault(k, key, *dst)
	}
	v, ok := s.take(key)
	if !ok {
		return false
	}
	m, isMap := asMap(v)
	if !isMap {
		s.d.add(s.at(key), "must be a mapping of strings (got %s)", got(v))
		return false
	}
	out := make(map[string]string, len(m))
	ok = true
	for k, val := range m {
		str, isStr := toStr(val)
		if !isStr {
			s.d.add(join(s.at(key), k), "must be a string (got %s)", got(val))
			ok = false
			continue
		}
		out[k] = str
	}
	if len(out) == 0 {
		out = nil
	}
	*dst = out
	return ok
}

func bound[N int | float64](n N) *float64 {
	f := float64(n)
	return &f
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), n >= math.MinInt && n <= math.MaxInt
	case uint64:
		return int(n), n <= math.MaxInt
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int(n), true
		}
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(n))
		return i, err == nil
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		return f, err == nil
	}
	return 0, false
}

func toBool(v any) (bool, bool) {
	switch b := v.(type) {
	case bool:
		return b, true
	case string:
		switch strings.ToLower(strings.TrimSpace(b)) {
		case "true", "yes", "on", "1":
			return true, true
		case "false", "no", "off", "0":
			return false, true
		}
	}
	return false, false
}

// toStr accepts any scalar: YAML turns `user: 1000` or `VERBOSE: true` into
// numbers and booleans that the user meant as text.
func toStr(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int, int64, uint64, bool:
		return fmt.Sprint(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case nil:
		return "", true
	}
	return "", false
}

// num renders a float without exponent so that messages read like the
// YAML that was written: 1000000, not 1e+06.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// got renders a value for "(got ...)": strings quoted so that empty and
// whitespace values are visible, collections by kind only.
func got(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case nil:
		return "null"
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	}
	return fmt.Sprint(v)
}
