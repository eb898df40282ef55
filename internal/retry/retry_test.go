package retry

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v5"
)

func TestPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		b    backoff.BackOff
		want []time.Duration
	}{
		{"call", Call(), []time.Duration{100, 200, 400, 800, 1600, 2000, 2000}},
		{"reconnect", Reconnect(), []time.Duration{250, 500, 1000, 2000, 4000, 8000, 10000, 10000}},
		{"contended", Contended(), []time.Duration{100, 200, 400, 800, 1000, 1000}},
		{"discovery check", Check(), []time.Duration{250, 500, 1000, 2000, 2000}},
	}
	for _, tt := range tests {
		for i, w := range tt.want {
			if got := tt.b.NextBackOff(); got != w*time.Millisecond {
				t.Errorf("%s: wait %d = %s, want %s", tt.name, i+1, got, w*time.Millisecond)
			}
		}
		tt.b.Reset()
		if got := tt.b.NextBackOff(); got != tt.want[0]*time.Millisecond {
			t.Errorf("%s: after Reset wait = %s", tt.name, got)
		}
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	b := NewBudget(3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 10 {
		wg.Go(func() {
			if b.Take() {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if granted != 3 || b.Used() != 3 {
		t.Errorf("granted %d, used %d; want 3 of a budget of 3", granted, b.Used())
	}
}

func TestSleep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		began := time.Now()
		if !Sleep(t.Context(), time.Second) || time.Since(began) != time.Second {
			t.Errorf("Sleep returned after %s", time.Since(began))
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer cancel()
		if Sleep(ctx, time.Hour) {
			t.Error("Sleep outlived its context")
		}
	})
}

func TestRestart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int
		want time.Duration
	}{
		{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {6, 32 * time.Second}, {7, 60 * time.Second}, {1000, 60 * time.Second},
	}
	for _, tt := range tests {
		if got := Restart(time.Second, time.Minute, tt.n); got != tt.want {
			t.Errorf("Restart(1s, 1m, %d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}
