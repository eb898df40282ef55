package main

import "testing"

func TestIdleReclaim(t *testing.T) {
	t.Parallel()
	const busy, idle = reclaimQuiet * 4, reclaimQuiet / 8
	tests := []struct {
		name  string
		ticks []uint64 // bytes allocated during each tick
		want  []bool
	}{
		{"quiet from the start: nothing to return", []uint64{idle, idle, idle}, []bool{false, false, false}},
		{"start-up work, then quiet: one return", []uint64{reclaimWorth, busy, idle, idle, idle, idle}, []bool{false, false, false, true, false, false}},
		{"steady load: never", []uint64{busy, busy, busy, busy, busy, busy, busy, busy, busy}, []bool{false, false, false, false, false, false, false, false, false}},
		{"a pause of one tick between bursts: no return", []uint64{reclaimWorth, idle, busy, idle, busy}, []bool{false, false, false, false, false}},
		{"too little work since the last return", []uint64{reclaimWorth, idle, idle, busy, idle, idle}, []bool{false, false, true, false, false, false}},
		{"work again after a return: one more", []uint64{reclaimWorth, idle, idle, reclaimWorth, busy, idle, idle, idle}, []bool{false, false, true, false, false, false, true, false}},
		{"a trickle adds up to one return", []uint64{idle, reclaimWorth - idle, idle, idle}, []bool{false, false, false, true}},
		{"a quiet period after work settles once more, 10 s in", append([]uint64{reclaimWorth, busy}, repeat(idle, reclaimSettleTicks+5)...),
			append(append(append([]bool{false, false, false, true}, make([]bool, reclaimSettleTicks-3)...), true), make([]bool, 5)...)},
		{"a quiet period with no return does not settle", repeat(idle, reclaimSettleTicks+5), make([]bool, reclaimSettleTicks+5)},
		{"small work after a return cannot cancel its settle", append(append([]uint64{reclaimWorth, busy, idle, idle, busy}, repeat(idle, reclaimSettleTicks-4)...), idle, idle),
			append(append([]bool{false, false, false, true, false}, make([]bool, reclaimSettleTicks-4)...), true, false)},
		{"work when the settle is due delays it to the next quiet tick", append(append([]uint64{reclaimWorth, busy, idle, idle}, repeat(idle, reclaimSettleTicks-3)...), busy, idle, idle, idle),
			append(append([]bool{false, false, false, true}, make([]bool, reclaimSettleTicks-3)...), false, false, true, false)},
		{"work enough for a return: the new return settles instead", append(append([]uint64{reclaimWorth, busy, idle, idle, reclaimWorth, idle, idle}, repeat(idle, reclaimSettleTicks-3)...), idle),
			append(append([]bool{false, false, false, true, false, false, true}, make([]bool, reclaimSettleTicks-3)...), true)},
	}
	for _, tt := range tests {
		if len(tt.ticks) != len(tt.want) {
			t.Fatalf("%s: %d ticks, %d wants", tt.name, len(tt.ticks), len(tt.want))
		}
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r idleReclaim
			allocated := uint64(3 << 20) // before the watcher starts
			if r.observe(allocated) {
				t.Fatal("the first reading only starts the count")
			}
			for i, n := range tt.ticks {
				allocated += n
				if got := r.observe(allocated); got != tt.want[i] {
					t.Errorf("tick %d (%d bytes): reclaim %v, want %v", i, n, got, tt.want[i])
				}
			}
		})
	}
}

func repeat(n uint64, times int) []uint64 {
	out := make([]uint64, times)
	for i := range out {
		out[i] = n
	}
	return out
}
