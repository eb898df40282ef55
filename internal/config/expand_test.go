package config

import "testing"

func TestExpand(t *testing.T) {
	t.Parallel()
	lookup := environLookup([]string{"A=1", "EMPTY=", "URL=https://h", "A=2", "NOEQUALS"})
	tests := []struct {
		in, want, err string
	}{
		{"plain", "plain", ""},
		{"${A}", "2", ""},
		{"x${A}y${A}z", "x2y2z", ""},
		{"${URL}/mcp", "https://h/mcp", ""},
		{"${MISSING:-d}", "d", ""},
		{"${MISSING:-}", "", ""},
		{"${MISSING:-a:-b}", "a:-b", ""},
		{"${EMPTY:-d}", "d", ""},
		{"${EMPTY}", "", ""},
		{"${A:-d}", "2", ""},
		{"$A $ $$ {A}", "$A $ $$ {A}", ""},
		{"${MISSING}", "", "environment variable MISSING is not set"},
		{"${NOEQUALS}", "", "environment variable NOEQUALS is not set"},
		{"a${A", "", `unterminated ${ in "${A"`},
		{"${}", "", "invalid environment variable reference ${}"},
		{"${A B}", "", "invalid environment variable reference ${A B}"},
		{"${:-x}", "", "invalid environment variable reference ${:-x}"},
	}
	for _, tt := range tests {
		got, err := expand(tt.in, lookup)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tt.want || gotErr != tt.err {
			t.Errorf("expand(%q) = %q, %q; want %q, %q", tt.in, got, gotErr, tt.want, tt.err)
		}
	}
}
