package main

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestUnwrittenSegments(t *testing.T) {
	const smaps = `00400000-012dd000 r-xp 00000000 fe:00 9977928    /bin/hangar
Rss:               13172 kB
Private_Dirty:     13172 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
012dd000-0234b000 r--p 00edd000 fe:00 9977928    /bin/hangar
Rss:               12536 kB
Anonymous:             4 kB
0234b000-02411000 rw-p 01f4b000 fe:00 9977928    /bin/hangar
Rss:                 664 kB
Anonymous:             0 kB
02500000-02600000 r-xp 00000000 fe:00 1111    /lib/other.so
Anonymous:             0 kB
02600000-02700000 r--p 00000000 fe:00 9977928    /bin/hangar
Rss:                 100 kB
Anonymous:             0 kB
7ffd1000-7ffd2000 r-xp 00000000 00:00 0                  [vdso]
Anonymous:             0 kB
`
	got, err := unwrittenSegments(strings.NewReader(smaps), "/bin/hangar")
	if err != nil {
		t.Fatal(err)
	}
	// The read-only data with a written page, the writable data, another
	// file's code and the vDSO stay.
	want := []segment{{0x400000, 0x12dd000}, {0x2600000, 0x2700000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dropped %x, want %x", got, want)
	}
}

// TestReleaseBinaryPages: the test binary's code is mapped less after the
// release, and runs on (what it needs is mapped again).
func TestReleaseBinaryPages(t *testing.T) {
	before := rssFile(t)
	releaseBinaryPages()
	after := rssFile(t)
	if after >= before {
		t.Errorf("RssFile %d kB before the release, %d kB after: nothing released", before, after)
	}
	t.Logf("RssFile %d kB → %d kB", before, after)
}

func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
