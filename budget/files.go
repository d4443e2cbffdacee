// The directory backend: a ledger and a head file per data set under the store's lock
// file, read and appended with fsync, a torn last line repaired, heads written atomically.

package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/internal/filelock"
	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/internal/strictjson"
)

// fileBackend is the store directory: a ledger and a head file per data set, and the
// lock file that serialises every read and append.
type fileBackend struct{ s *Store }

func (b fileBackend) begin(string) (storage, error) {
	lk, err := b.s.lock()
	if err != nil {
		return nil, err
	}
	return fileStorage{b.s, lk}, nil
}

func (fileBackend) close() error { return nil }

// fileStorage is the store directory under its lock file.
type fileStorage struct {
	*Store
	lk *filelock.Lock
}

func (s fileStorage) load(fp string) ([]byte, []byte, error) {
	data, err := readFile(s.ledgerPath(fp))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("budget: %w", err)
	}
	head, herr := readFile(s.headPath(fp))
	if herr != nil && !errors.Is(herr, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("budget: %w", herr)
	}
	if head == nil && herr == nil {
		head = []byte{} // an empty head file is a head that does not parse
	}
	return data, head, err
}

// The ledger file is synced by every append: nothing is left to commit.
func (s fileStorage) commit() error { return nil }
func (s fileStorage) end()          { s.lk.Unlock() }

func (s fileStorage) ledgerName(fp string) string { return s.ledgerPath(fp) }
func (s fileStorage) headName() string            { return "the head file" }

// fingerprints lists the data sets of the store directory, sorted.
func (s fileStorage) fingerprints() ([]string, error) {
	des, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("budget: %w", err)
	}
	seen := map[string]bool{}
	var fps []string
	for _, de := range des {
		name := de.Name()
		for _, ext := range []string{".ledger", ".head"} {
			if fp, ok := strings.CutSuffix(name, ext); ok && isHex64(fp) && !seen[fp] {
				seen[fp] = true
				fps = append(fps, fp)
			}
		}
	}
	slices.Sort(fps)
	return fps, nil
}

func (s *Store) ledgerPath(fp string) string { return filepath.Join(s.dir, fp+".ledger") }
func (s *Store) headPath(fp string) string   { return filepath.Join(s.dir, fp+".head") }

func (s *Store) lock() (*filelock.Lock, error) {
	l, err := filelock.Wait(filepath.Join(s.dir, "lock"))
	if err != nil {
		return nil, fmt.Errorf("budget: locking the store %s: %w", s.dir, err)
	}
	return l, nil
}

// put appends line (entry seq, whose hash is hash) to the ledger file: it first cuts a
// torn last line, creates the head before a new ledger, appends the whole line with one
// write and fsync, then updates the head.
func (s fileStorage) put(l *ledger, line []byte, seq int, hash string, key []byte) error {
	path := s.ledgerPath(l.fp)
	if l.torn >= 0 {
		if err := truncateRegular(path, l.torn); err != nil {
			return fmt.Errorf("budget: repairing the torn last line of %s: %w", path, err)
		}
		l.torn = -1
	}
	if !l.exists {
		if err := s.writeHead(l.fp, -1, genesis(l.fp), l.key(s.Store)); err != nil {
			return err
		}
	} else if last := len(l.entries) - 1; l.headSeq != last {
		// A crash between an append and the head's update left the head one entry
		// behind: bring it up to date first, or a second such crash would leave it two
		// behind, which reads as removed entries.
		if err := s.writeHead(l.fp, last, l.hashAt(last), l.key(s.Store)); err != nil {
			return err
		}
	}
	f, err := safeio.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("budget: %w", err)
	}
	size := fi.Size() // the ledger before this entry (a torn line was cut above)
	// undo cuts this entry off again when it cannot be completed (its line not written
	// whole and synced, or the head not updated: a full or read-only store): the caller
	// then fails, and a reservation that fails leaves no unsettled run behind, since its
	// run never starts. If the cut fails too, the entry stays: a head one entry behind is
	// read as a crash between the two writes, and the entry counts.
	undo := func(err error) error {
		if terr := truncateRegular(path, size); terr != nil {
			return fmt.Errorf("%w (and cutting the unfinished entry off failed: %v; it counts)", err, terr)
		}
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return undo(fmt.Errorf("budget: appending to %s: %w", path, err))
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return undo(fmt.Errorf("budget: syncing %s: %w", path, err))
	}
	if err := f.Close(); err != nil {
		return undo(fmt.Errorf("budget: %w", err))
	}
	if !l.exists {
		if err := syncDir(s.dir); err != nil {
			return undo(err)
		}
		l.exists = true
	}
	if err := s.writeHead(l.fp, seq, hash, key); err != nil && !s.headNames(l.fp, seq, hash) {
		// (A head renamed into place whose directory sync failed names the entry
		// already: then the entry stands.)
		return undo(err)
	}
	return nil
}

// headNames reports whether data set fp's head file names entry seq with hash.
func (s *Store) headNames(fp string, seq int, hash string) bool {
	data, err := readFile(s.headPath(fp))
	if err != nil {
		return false
	}
	var h headRecord
	return strictjson.Unmarshal(data, &h) == nil && h.Seq == seq && h.Hash == hash
}

func (s *Store) writeHead(fp string, seq int, hash string, key []byte) error {
	h := newHead(fp, seq, hash, key)
	err := atomicfile.Write(s.headPath(fp), 0o600, func(w io.Writer) error {
		return json.NewEncoder(w).Encode(h)
	})
	if err != nil {
		return fmt.Errorf("budget: writing the head of %s: %w", short(fp), err)
	}
	return nil
}

// readFile reads a store file whole, refusing one that is not a regular file (without
// blocking on a FIFO or following a link).
func readFile(path string) ([]byte, error) {
	f, err := safeio.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// truncateRegular cuts the regular file at path to n bytes; like every open of the
// store's files it follows no link and refuses a FIFO or a device (os.Truncate would
// follow a link at path and cut its target).
func truncateRegular(path string, n int64) error {
	f, err := safeio.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(n); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("budget: syncing %s: %w", dir, err)
	}
	return nil
}
