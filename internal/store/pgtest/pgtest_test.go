package pgtest

import (
	"errors"
	"fmt"
	"testing"
)

// recorder is a testing.TB that records how the test would have ended.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
}

// Not parallel: it sets CI.
func TestNeedFailsUnderCI(t *testing.T) {
	why := errors.New("no initdb")
	for _, tt := range []struct {
		ci         string
		fail, skip bool
	}{
		{"true", true, false},
		{"", false, true},
		{"false", false, true},
	} {
		t.Setenv("CI", tt.ci)
		r := &recorder{TB: t}
		if c := Need(r, nil, why); c != nil {
			t.Fatalf("CI=%q: a cluster from nothing", tt.ci)
		}
		if (r.fatal != "") != tt.fail || (r.skip != "") != tt.skip {
			t.Errorf("CI=%q: fatal %q, skip %q", tt.ci, r.fatal, r.skip)
		}
	}
	c := &Cluster{}
	if got := Need(&recorder{TB: t}, c, nil); got != c {
		t.Error("Need did not pass a cluster through")
	}
}
