package batch

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// problem is a ValidationError reduced to where it points: index -1 is a
// batch-level parameter.
type problem struct {
	index int
	field string
}

func problemsOf(errs []ValidationError) []problem {
	out := make([]problem, len(errs))
	for i, e := range errs {
		idx := -1
		if e.Index != nil {
			idx = *e.Index
		}
		out[i] = problem{idx, e.Field}
	}
	slices.SortFunc(out, func(a, b problem) int {
		if a.index != b.index {
			return a.index - b.index
		}
		return strings.Compare(a.field, b.field)
	})
	return out
}

func okCall() map[string]any { return map[string]any{"mcp_server": "s", "tool": "t"} }

func calls(items ...any) []any { return items }

func manyCalls(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = okCall()
	}
	return out
}

func TestParseValidation(t *testing.T) {
	t.Parallel()
	lim := DefaultLimits()
	tests := []struct {
		name string
		args map[string]any
		want []problem
		msg  string // part of the first message, when set
	}{
		{"calls missing", map[string]any{}, []problem{{-1, "calls"}}, "is required"},
		{"calls null", map[string]any{"calls": nil}, []problem{{-1, "calls"}}, "is required"},
		{"calls not a list", map[string]any{"calls": "x"}, []problem{{-1, "calls"}}, "must be a list"},
		{"calls an object", map[string]any{"calls": okCall()}, []problem{{-1, "calls"}}, "must be a list"},
		{"calls empty", map[string]any{"calls": []any{}}, []problem{{-1, "calls"}}, "must have 1..100 items (got 0)"},
		{"calls over the limit", map[string]any{"calls": manyCalls(101)}, []problem{{-1, "calls"}}, "must have 1..100 items (got 101)"},
		{"over the limit skips item checks", map[string]any{"calls": append(manyCalls(100), "junk")}, []problem{{-1, "calls"}}, "got 101"},
		{"item not an object", map[string]any{"calls": calls(okCall(), "x", 3.0, nil)}, []problem{{1, "calls"}, {2, "calls"}, {3, "calls"}}, "must be an object"},
		{"mcp_server missing", map[string]any{"calls": calls(map[string]any{"tool": "t"})}, []problem{{0, "mcp_server"}}, "non-empty string"},
		{"mcp_server empty", map[string]any{"calls": calls(map[string]any{"mcp_server": "", "tool": "t"})}, []problem{{0, "mcp_server"}}, ""},
		{"mcp_server not a string", map[string]any{"calls": calls(map[string]any{"mcp_server": 1.0, "tool": "t"})}, []problem{{0, "mcp_server"}}, ""},
		{"tool missing", map[string]any{"calls": calls(map[string]any{"mcp_server": "s"})}, []problem{{0, "tool"}}, "non-empty string"},
		{"tool empty", map[string]any{"calls": calls(map[string]any{"mcp_server": "s", "tool": ""})}, []problem{{0, "tool"}}, ""},
		{"tool not a string", map[string]any{"calls": calls(map[string]any{"mcp_server": "s", "tool": []any{"t"}})}, []problem{{0, "tool"}}, ""},
		{"arguments not an object", map[string]any{"calls": calls(map[string]any{"mcp_server": "s", "tool": "t", "arguments": "x"})}, []problem{{0, "arguments"}}, "must be an object"},
		{"arguments a list", map[string]any{"calls": calls(map[string]any{"mcp_server": "s", "tool": "t", "arguments": []any{}})}, []problem{{0, "arguments"}}, ""},
		{"unknown field", map[string]any{"calls": calls(map[string]any{"mcp_server": "s", "tool": "t", "provider": "x"})}, []problem{{0, "provider"}}, "unknown field"},
		{"two unknown fields", map[string]any{"calls": calls(map[string]any{"mcp_server": "s", "tool": "t", "x": 1.0, "y": 2.0})}, []problem{{0, "x"}, {0, "y"}}, ""},
		{"call timeout too small", map[string]any{"calls": calls(map[string]any{"mcp_server": "s", "tool": "t", "timeout": 0.5})}, []problem{{0, "timeout"}}, "1..300"},
		{"call timeout too big", map[string]any{"calls": calls(map[string]any{"mcp_server": "s", "tool": "t", "timeout": 301.0})}, []problem{{0, "timeout"}}, ""},
		{"call timeout a string", map[string]any{"calls": calls(map[string]any{"mcp_server": "s", "tool": "t", "timeout": "5"})}, []problem{{0, "timeout"}}, ""},
		{"call timeout NaN", map[string]any{"calls": calls(map[string]any{"mcp_server": "s", "tool": "t", "timeout": math.NaN()})}, []problem{{0, "timeout"}}, ""},
		{"max_concurrency 0", map[string]any{"calls": calls(okCall()), "max_concurrency": 0.0}, []problem{{-1, "max_concurrency"}}, "1..50 (got 0)"},
		{"max_concurrency over", map[string]any{"calls": calls(okCall()), "max_concurrency": 51.0}, []problem{{-1, "max_concurrency"}}, ""},
		{"max_concurrency negative", map[string]any{"calls": calls(okCall()), "max_concurrency": -1.0}, []problem{{-1, "max_concurrency"}}, ""},
		{"max_concurrency fractional", map[string]any{"calls": calls(okCall()), "max_concurrency": 2.5}, []problem{{-1, "max_concurrency"}}, ""},
		{"max_concurrency string", map[string]any{"calls": calls(okCall()), "max_concurrency": "5"}, []problem{{-1, "max_concurrency"}}, ""},
		{"max_concurrency huge", map[string]any{"calls": calls(okCall()), "max_concurrency": 1e300}, []problem{{-1, "max_concurrency"}}, ""},
		{"max_concurrency inf", map[string]any{"calls": calls(okCall()), "max_concurrency": math.Inf(1)}, []problem{{-1, "max_concurrency"}}, ""},
		{"max_concurrency bool", map[string]any{"calls": calls(okCall()), "max_concurrency": true}, []problem{{-1, "max_concurrency"}}, ""},
		{"timeout too small", map[string]any{"calls": calls(okCall()), "timeout": 0.999}, []problem{{-1, "timeout"}}, "1..300"},
		{"timeout zero", map[string]any{"calls": calls(okCall()), "timeout": 0.0}, []problem{{-1, "timeout"}}, ""},
		{"timeout too big", map[string]any{"calls": calls(okCall()), "timeout": 300.5}, []problem{{-1, "timeout"}}, ""},
		{"timeout string", map[string]any{"calls": calls(okCall()), "timeout": "60"}, []problem{{-1, "timeout"}}, ""},
		{"fail_fast not a bool", map[string]any{"calls": calls(okCall()), "fail_fast": "yes"}, []problem{{-1, "fail_fast"}}, "must be a boolean"},
		{"fail_fast a number", map[string]any{"calls": calls(okCall()), "fail_fast": 1.0}, []problem{{-1, "fail_fast"}}, ""},
		{"max_attempts 0", map[string]any{"calls": calls(okCall()), "max_attempts": 0.0}, []problem{{-1, "max_attempts"}}, "1..10 (got 0)"},
		{"max_attempts over", map[string]any{"calls": calls(okCall()), "max_attempts": 11.0}, []problem{{-1, "max_attempts"}}, ""},
		{"max_attempts fractional", map[string]any{"calls": calls(okCall()), "max_attempts": 1.5}, []problem{{-1, "max_attempts"}}, ""},
		{"everything wrong at once", map[string]any{
			"calls":           calls(map[string]any{"tool": ""}, okCall(), 1.0),
			"max_concurrency": 0.0, "timeout": 0.0, "fail_fast": "x", "max_attempts": 0.0,
		}, []problem{
			{-1, "fail_fast"}, {-1, "max_attempts"}, {-1, "max_concurrency"}, {-1, "timeout"},
			{0, "mcp_server"}, {0, "tool"}, {2, "calls"},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, errs := Parse(tt.args, lim)
			got := problemsOf(errs)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("problems = %v, want %v (errors %+v)", got, tt.want, errs)
			}
			if tt.msg != "" && !strings.Contains(errs[0].Message, tt.msg) {
				t.Errorf("message %q does not contain %q", errs[0].Message, tt.msg)
			}
			for _, e := range errs {
				if e.Message == "" {
					t.Errorf("empty message for %+v", e)
				}
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	lim := DefaultLimits()
	tests := []struct {
		name string
		args map[string]any
		want Request
	}{
		{
			"defaults",
			map[string]any{"calls": calls(okCall())},
			Request{
				Calls:          []Call{{Server: "s", Tool: "t", Arguments: map[string]any{}}},
				MaxConcurrency: 10, Timeout: 60 * time.Second, FailFast: false, MaxAttempts: 1,
			},
		},
		{
			"nulls take the defaults",
			map[string]any{
				"calls":           calls(map[string]any{"mcp_server": "s", "tool": "t", "arguments": nil, "timeout": nil}),
				"max_concurrency": nil, "timeout": nil, "fail_fast": nil, "max_attempts": nil,
			},
			Request{
				Calls:          []Call{{Server: "s", Tool: "t", Arguments: map[string]any{}}},
				MaxConcurrency: 10, Timeout: 60 * time.Second, MaxAttempts: 1,
			},
		},
		{
			"everything set",
			map[string]any{
				"calls": calls(
					map[string]any{"mcp_server": "a", "tool": "x", "arguments": map[string]any{"k": "v"}, "timeout": 2.5},
					map[string]any{"mcp_server": "b", "tool": "y"},
				),
				"max_concurrency": 50.0, "timeout": 300.0, "fail_fast": true, "max_attempts": 10.0,
			},
			Request{
				Calls: []Call{
					{Server: "a", Tool: "x", Arguments: map[string]any{"k": "v"}, Timeout: 2500 * time.Millisecond},
					{Server: "b", Tool: "y", Arguments: map[string]any{}},
				},
				MaxConcurrency: 50, Timeout: 300 * time.Second, FailFast: true, MaxAttempts: 10,
			},
		},
		{
			"bounds are inclusive",
			map[string]any{
				"calls":           calls(map[string]any{"mcp_server": "s", "tool": "t", "timeout": 1.0}),
				"max_concurrency": 1.0, "timeout": 1.0, "fail_fast": false, "max_attempts": 1.0,
			},
			Request{
				Calls:          []Call{{Server: "s", Tool: "t", Arguments: map[string]any{}, Timeout: time.Second}},
				MaxConcurrency: 1, Timeout: time.Second, MaxAttempts: 1,
			},
		},
		{
			"whole floats are integers",
			map[string]any{"calls": calls(okCall()), "max_concurrency": 7.0, "max_attempts": 3.0},
			Request{
				Calls:          []Call{{Server: "s", Tool: "t", Arguments: map[string]any{}}},
				MaxConcurrency: 7, Timeout: 60 * time.Second, MaxAttempts: 3,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, errs := Parse(tt.args, lim)
			if len(errs) > 0 {
				t.Fatalf("errors: %+v", errs)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseMaxCallsBoundary(t *testing.T) {
	t.Parallel()
	lim := DefaultLimits()
	for _, n := range []int{1, 99, 100} {
		req, errs := Parse(map[string]any{"calls": manyCalls(n)}, lim)
		if len(errs) != 0 || len(req.Calls) != n {
			t.Errorf("%d calls: %d parsed, errors %+v", n, len(req.Calls), errs)
		}
	}
	lim.MaxCalls = 2
	if _, errs := Parse(map[string]any{"calls": manyCalls(3)}, lim); len(errs) != 1 || !strings.Contains(errs[0].Message, "1..2 items (got 3)") {
		t.Errorf("custom MaxCalls: %+v", errs)
	}
}

func TestParseLimitsFollowConfig(t *testing.T) {
	t.Parallel()
	lim := DefaultLimits()
	lim.MaxConcurrency, lim.MaxTimeout, lim.MaxAttempts, lim.DefaultConcurrency, lim.DefaultTimeout = 4, 20*time.Second, 2, 3, 5*time.Second
	req, errs := Parse(map[string]any{"calls": calls(okCall())}, lim)
	if len(errs) != 0 || req.MaxConcurrency != 3 || req.Timeout != 5*time.Second {
		t.Errorf("defaults from limits: %+v %+v", req, errs)
	}
	for _, tc := range []struct {
		key string
		val float64
	}{{"max_concurrency", 5}, {"timeout", 21}, {"max_attempts", 3}} {
		_, errs := Parse(map[string]any{"calls": calls(okCall()), tc.key: tc.val}, lim)
		if len(errs) != 1 || errs[0].Field != tc.key {
			t.Errorf("%s=%v: %+v", tc.key, tc.val, errs)
		}
	}
}

func TestValidationErrorJSONIndex(t *testing.T) {
	t.Parallel()
	_, errs := Parse(map[string]any{"calls": calls("x"), "timeout": 0.0}, DefaultLimits())
	got := make([]string, len(errs))
	for i, e := range errs {
		if e.Index == nil {
			got[i] = "nil:" + e.Field
		} else {
			got[i] = fmt.Sprintf("%d:%s", *e.Index, e.Field)
		}
	}
	slices.Sort(got)
	if want := []string{"0:calls", "nil:timeout"}; !slices.Equal(got, want) {
		t.Errorf("errors = %v, want %v", got, want)
	}
}
