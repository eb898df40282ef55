package frontdoor

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCallableNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70) // a 70-character tool name
	reserved := func(n string) bool { return n == "hangar_list" || n == "hangar_call" }
	tests := []struct {
		name string
		reqs []nameRequest
		want []string // per request, in order
	}{
		{"plain", []nameRequest{{"math", "math", "add"}}, []string{"math__add"}},
		{"sanitised", []nameRequest{{"io.acme/w", "io.acme/w", "get temp!"}}, []string{"io_acme_w__get_temp_"}},
		{"prefix override", []nameRequest{{"math", "m", "add"}}, []string{"m__add"}},
		{"exactly 64", []nameRequest{{"s", "s", strings.Repeat("y", 61)}}, []string{"s__" + strings.Repeat("y", 61)}},
		{"70-character tool", []nameRequest{{"srv", "srv", long}},
			[]string{"srv__" + strings.Repeat("x", 52) + "_" + "fe6c03"}},
		// Sanitising makes two servers' names the same: both get a suffix,
		// whatever their order.
		{"collision", []nameRequest{{"a.b", "a.b", "t"}, {"a_b", "a_b", "t"}},
			[]string{"a_b__t_" + "3907e3", "a_b__t_" + "98090c"}},
		{"flat collision", []nameRequest{{"one", "", "add"}, {"two", "", "add"}, {"two", "", "sub"}},
			[]string{"add_" + "5791b2", "add_" + "c2ff3d", "sub"}},
		{"reserved", []nameRequest{{"x", "", "hangar_list"}}, []string{"hangar_list_" + "7c822d"}},
	}
	// The suffixes are spelled out (sha256 of server NUL tool, checked
	// with sha256sum): agents keep names, so the scheme must not drift.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The same names in any order.
			for range 5 {
				reqs := append([]nameRequest(nil), tt.reqs...)
				rand.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
				got := callableNames(reqs, reserved)
				for i, r := range tt.reqs {
					if got[r] != tt.want[i] {
						t.Errorf("%+v → %q, want %q", r, got[r], tt.want[i])
					}
					if len(got[r]) > maxCallable {
						t.Errorf("%q is %d characters", got[r], len(got[r]))
					}
				}
			}
		})
	}
}
