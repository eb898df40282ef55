package main

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// releaseBinaryPages drops this process's mappings of its own executable's
// read-only segments (code and read-only data), so that its resident set
// holds what the gateway uses from now on rather than all that start-up
// touched: the package initialisers of every linked module run once,
// spread over the whole text, and the kernel maps the page cache around
// each fault (64 KiB, or a whole large folio), so an idle gateway had most
// of its 38 MB binary resident (RssFile about 26 MB of an RSS of 33 MB).
// The pages stay in the page cache; what is used again is mapped again at
// a minor fault.
//
// Only a mapping none of whose pages was ever written is dropped: a write
// to a private file mapping makes an anonymous copy of the page (smaps'
// Anonymous), and dropping it would lose the write (relocations of a PIE
// or cgo build, a debugger's breakpoints); an unwritten page is the
// file's own bytes. (Private_Dirty says nothing here: it counts page cache
// pages not yet written back, as a freshly built binary's are.)
func releaseBinaryPages() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return
	}
	drop, err := unwrittenSegments(f, exe)
	f.Close()
	if err != nil {
		return
	}
	for _, m := range drop {
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), syscall.MADV_DONTNEED)
	}
}

// segment is an address range of a mapping.
type segment struct{ start, end uint64 }

// unwrittenSegments reads smaps and returns the read-only mappings of exe
// with no anonymous (copied on write) page.
func unwrittenSegments(smaps io.Reader, exe string) ([]segment, error) {
	var (
		drop    []segment
		cur     segment
		in      bool // the lines read belong to a candidate mapping
		written bool
	)
	flush := func() {
		if in && !written {
			drop = append(drop, cur)
		}
		in, written = false, false
	}
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if lo, hi, isRange := strings.Cut(fields[0], "-"); isRange && !strings.HasSuffix(fields[0], ":") {
			// 00400000-012dc000 r-xp 00000000 08:01 1234 /path/to/hangar
			flush()
			if len(fields) < 6 || fields[5] != exe || (fields[1] != "r-xp" && fields[1] != "r--p") {
				continue
			}
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil && end > start {
				cur, in = segment{start, end}, true
			}
			continue
		}
		if in && fields[0] == "Anonymous:" && len(fields) > 1 && fields[1] != "0" {
			written = true
		}
	}
	flush()
	return drop, sc.Err()
}
