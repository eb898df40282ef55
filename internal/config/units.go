package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// minMemoryBytes is the schema's floor, inherited from the Python hangar
// (Docker's historical minimum). Recent engines want 6 MiB and will refuse
// smaller limits when the container is created, not here.
const minMemoryBytes = 4 << 20

// Units are binary, as in `docker run --memory`, so "512m" means 512 MiB
// whether written m, mb or mi.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "ki": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mi": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gi": 1 << 30,
}

var sizeRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)$`) })
var errSize = errors.New("not a size")

// sizePattern is sizeRe with sizeUnits for the schema, which has no
// case-insensitive flag: "512m", "1.5 GiB"'s units in either case.
func sizePattern() string {
	units := make([]string, 0, len(sizeUnits))
	for _, u := range sortedKeys(sizeUnits) {
		if u == "" {
			continue
		}
		var b strings.Builder
		for _, c := range u {
			fmt.Fprintf(&b, "[%c%c]", c, unicode.ToUpper(c))
		}
		units = append(units, b.String())
	}
	return `^\s*[0-9]+(\.[0-9]+)?\s*(` + strings.Join(units, "|") + `)?\s*$`
}

// parseSize reads a memory size: a plain number of bytes or a number with a
// unit (b, k, m, g; also kb/mb/gb and ki/mi/gi), case-insensitive.
func parseSize(v any) (int64, error) {
	switch n := v.(type) {
	case int, int64, uint64, float64:
		f, _ := toFloat(n)
		if f < 0 || f != math.Trunc(f) || f >= math.MaxInt64 {
			return 0, errSize
		}
		return int64(f), nil
	case string:
		m := sizeRe().FindStringSubmatch(strings.ToLower(strings.TrimSpace(n)))
		if m == nil {
			return 0, errSize
		}
		mult, ok := sizeUnits[m[2]]
		if !ok {
			return 0, errSize
		}
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, errSize
		}
		b := f * float64(mult)
		if b >= math.MaxInt64 {
			return 0, errSize
		}
		return int64(b), nil
	}
	return 0, errSize
}

// parseCPUs reads a CPU count (number or numeric string) as Docker NanoCPUs.
func parseCPUs(v any) (float64, int64, bool) {
	f, ok := toFloat(v)
	if !ok {
		return 0, 0, false
	}
	return f, int64(math.Round(f * 1e9)), true
}

func (s *section) size(key string, dst *int64, lo int64, loText string, doc string) {
	if k := s.def(key, doc, "integer", "string"); k != nil {
		k.Min, k.Unit, k.Pattern = bound(float64(lo)), unitBytes, sizePattern()
		s.setDefault(k, key, *dst)
	}
	v, ok := s.take(key)
	if !ok {
		return
	}
	n, err := parseSize(v)
	if err != nil {
		s.d.add(s.at(key), "must be a size like 512m (units b, k, m, g) (got %s)", got(v))
		return
	}
	if n < lo {
		s.d.add(s.at(key), "must be at least %s (got %s)", loText, got(v))
		return
	}
	*dst = n
}

func (s *section) cpus(key string, dst *int64, lo, hi float64, doc string) {
	if k := s.def(key, doc, "number", "string"); k != nil {
		k.Min, k.Max, k.Unit, k.Pattern = bound(lo), bound(hi), unitCPUs, `^\s*[0-9]+(\.[0-9]+)?\s*$`
		s.setDefault(k, key, *dst)
	}
	v, ok := s.take(key)
	if !ok {
		return
	}
	f, nano, ok := parseCPUs(v)
	if !ok {
		s.d.add(s.at(key), "must be a number of CPUs (got %s)", got(v))
		return
	}
	if !(f >= lo && f <= hi) {
		s.d.add(s.at(key), "must be %s..%s (got %s)", num(lo), num(hi), num(f))
		return
	}
	*dst = nano
}
