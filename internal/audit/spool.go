package audit

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/mcp-hangar/hangar/internal/store"
)

// spool makes the queue survive the process: every entry handed to the
// writer is first appended to a file in the data dir (one JSON line, one
// write(2); no fsync: a SIGKILLed process's writes are in the kernel's
// page cache, only a crash of the machine loses them), and the offset up
// to which entries are in the store is kept in a second file (8 bytes,
// written after each batch). A gateway that starts replays what lies
// beyond that offset before anything else: an entry whose call was
// answered reaches the store even when the process was killed before its
// batch was written, or while the store was down. An entry stored just
// before a kill, whose offset was not yet recorded, is stored again at
// the next start (at least once, never lost). Once everything written is
// stored and the file has grown past rotateAt, it is emptied.
type spool struct {
	mu   sync.Mutex // orders appends (and their queueing) with rotation
	f    *os.File   // O_APPEND
	mark *os.File   // the stored offset, 8 bytes big-endian
	size int64      // the file's length: the next entry's start
	done int64      // the offset whose entries before it are stored
	buf  bytes.Buffer

	rotateAt int64
}

// spoolRotateAt is the default size past which a fully stored spool is
// emptied.
const spoolRotateAt = 4 << 20

// openSpool opens (or creates) the spool at path and reads the entries
// not yet stored.
func openSpool(path string, rotateAt int64) (*spool, []spooled, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("audit spool: %w", err)
	}
	mark, err := os.OpenFile(path+".stored", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("audit spool: %w", err)
	}
	s := &spool{f: f, mark: mark, rotateAt: rotateAt}
	if s.rotateAt <= 0 {
		s.rotateAt = spoolRotateAt
	}
	var b [8]byte
	if n, _ := mark.ReadAt(b[:], 0); n == 8 {
		s.done = int64(binary.BigEndian.Uint64(b[:]))
	}
	data, err := io.ReadAll(f)
	if err != nil {
		s.close()
		return nil, nil, fmt.Errorf("audit spool: %w", err)
	}
	// A line cut short was never acknowledged (its write did not finish):
	// drop it, so that the next entry starts a line of its own.
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		data = data[:i+1]
		if err := f.Truncate(int64(len(data))); err != nil {
			s.close()
			return nil, nil, fmt.Errorf("audit spool: %w", err)
		}
	}
	s.size = int64(len(data))
	if s.done > s.size { // the file was emptied after the mark was read: nothing is owed
		s.done = s.size
	}
	var pending []spooled
	off := s.done
	for off < s.size {
		line := data[off:]
		line = line[:bytes.IndexByte(line, '\n')+1]
		off += int64(len(line))
		var e store.AuditEntry
		if err := json.Unmarshal(line, &e); err != nil {
			continue // not an entry of ours: nothing to replay
		}
		pending = append(pending, spooled{e: e, end: off})
	}
	return s, pending, nil
}

// spooled is a queued entry and the spool offset just past it (0 without
// a spool).
type spooled struct {
	e   store.AuditEntry
	end int64
}

// append writes e's line; the caller holds mu.
func (s *spool) append(e store.AuditEntry) (int64, error) {
	s.buf.Reset()
	if err := json.NewEncoder(&s.buf).Encode(e); err != nil {
		return 0, err
	}
	n, err := s.f.Write(s.buf.Bytes())
	s.size += int64(n)
	if err != nil {
		return 0, err
	}
	return s.size, nil
}

// stored records that every entry up to end is in the store, and empties
// the file once it is all stored and big enough.
func (s *spool) stored(end int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if end <= s.done {
		return nil
	}
	s.done = end
	if s.done == s.size && s.size >= s.rotateAt {
		// Nothing queued lies beyond (appends wait on mu). The mark goes
		// first: a mark of 0 over a file not emptied replays stored
		// entries (again), never skips one.
		if err := s.writeMark(0); err != nil {
			return err
		}
		if err := s.f.Truncate(0); err != nil {
			return err
		}
		s.size, s.done = 0, 0
		return nil
	}
	return s.writeMark(s.done)
}

func (s *spool) writeMark(off int64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(off))
	_, err := s.mark.WriteAt(b[:], 0)
	return err
}

func (s *spool) close() error {
	return errors.Join(s.f.Close(), s.mark.Close())
}
