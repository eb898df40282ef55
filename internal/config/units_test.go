package config

import "testing"

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   any
		want int64
		ok   bool
	}{
		{"512m", 512 << 20, true},
		{"512M", 512 << 20, true},
		{"512mb", 512 << 20, true},
		{"512MB", 512 << 20, true},
		{"512Mi", 512 << 20, true},
		{"1g", 1 << 30, true},
		{"1GB", 1 << 30, true},
		{"1gi", 1 << 30, true},
		{"1.5g", 3 << 29, true},
		{"64k", 64 << 10, true},
		{"64KB", 64 << 10, true},
		{"64ki", 64 << 10, true},
		{"4194304b", 4 << 20, true},
		{"4194304", 4 << 20, true},
		{" 8 m ", 8 << 20, true},
		{4194304, 4 << 20, true},
		{float64(1024), 1024, true},
		{"", 0, false},
		{"m", 0, false},
		{"12x", 0, false},
		{"1t", 0, false},
		{"1kib", 0, false},
		{"-1m", 0, false},
		{"1.2.3m", 0, false},
		{"1e3m", 0, false},
		{-1, 0, false},
		{1.5, 0, false},
		{"99999999999g", 0, false},
		{true, 0, false},
		{nil, 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSize(%#v) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseCPUs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   any
		want int64
		ok   bool
	}{
		{1, 1e9, true},
		{"1.0", 1e9, true},
		{"0.5", 5e8, true},
		{0.25, 25e7, true},
		{"0.01", 1e7, true},
		{64, 64e9, true},
		{" 2 ", 2e9, true},
		{"two", 0, false},
		{true, 0, false},
		{[]any{1}, 0, false},
	}
	for _, tt := range tests {
		_, got, ok := parseCPUs(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseCPUs(%#v) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
