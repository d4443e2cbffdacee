// Package filelock holds advisory, process-wide locks on files (flock(2) on Unix): the
// lock of a checkpoint path for a training run's life, and the lock of a budget store
// while an entry is appended. The kernel drops a lock when its holder exits, kill -9
// included, so a crashed process never leaves a stale lock behind. The lock file holds
// the holder's pid (text) so that a refused caller can name it.
package filelock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/internal/safeio"
)

// ErrLocked is returned by TryLock when another process (or another Lock of this
// process) holds the lock; the *HeldError wrapping it names the holder's pid.
var ErrLocked = errors.New("locked by another process")

// HeldError says who holds a lock that TryLock could not take.
type HeldError struct {
	Path string
	PID  int // 0 when the lock file names no pid
}

func (e *HeldError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%s is locked by process %d", e.Path, e.PID)
	}
	return fmt.Sprintf("%s is locked by another process", e.Path)
}

func (e *HeldError) Unwrap() error { return ErrLocked }

// Lock is a held lock; Unlock releases it.
type Lock struct {
	f    *os.File
	path string
}

// TryLock takes the exclusive lock of path (created if absent, mode 0o644) without
// waiting, and writes this process's pid into it. It returns a *HeldError (errors.Is
// ErrLocked) when the lock is held elsewhere.
//
// A lock file is opened without following a symbolic link and without blocking, and
// must be a regular file (else the error wraps safeio.ErrNotRegular); TryLock writes
// into it only when it has one link and holds nothing but a pid (or nothing), and it
// never truncates it: the pid is written over the old one, padded with spaces. So a
// lock path that names a link, a FIFO, a device or somebody's file by mistake or by
// malice is refused and left as it was.
func TryLock(path string) (*Lock, error) { return lock(path, false) }

// Wait takes the exclusive lock of path, waiting for its holder to release it; it does
// not write the pid (the store's lock file is not the store's data). The lock file is
// opened as TryLock opens it.
func Wait(path string) (*Lock, error) { return lock(path, true) }

// maxPIDFile is the longest content of a lock file that TryLock writes over.
const maxPIDFile = 32

func lock(path string, wait bool) (*Lock, error) {
	f, err := safeio.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := flock(f, wait); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, &HeldError{Path: path, PID: readPID(path)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	l := &Lock{f: f, path: path}
	if !wait {
		if err := writePID(f, path); err != nil {
			l.Unlock()
			return nil, err
		}
	}
	return l, nil
}

// writePID writes this process's pid over what f holds, once it is sure that f is a lock
// file: one link, and nothing but a pid in it.
func writePID(f *os.File, path string) error {
	if n := links(f); n > 1 {
		return fmt.Errorf("lock file %s has %d hard links: it may be another file than a lock; remove it", path, n)
	}
	old := make([]byte, maxPIDFile+1)
	n, err := f.ReadAt(old, 0)
	if err != nil && err != io.EOF {
		return fmt.Errorf("lock file %s: %w", path, err)
	}
	old = old[:n]
	if n > maxPIDFile || strings.Trim(string(old), "0123456789 \n") != "" {
		return fmt.Errorf("lock file %s holds something other than a process id: it is not a lock file; remove it or choose another path", path)
	}
	rec := []byte(strconv.Itoa(os.Getpid()))
	for len(rec) < max(n, 21)-1 {
		rec = append(rec, ' ')
	}
	_, err = f.WriteAt(append(rec, '\n'), 0)
	return err
}

// Path is the locked file's path.
func (l *Lock) Path() string { return l.path }

// Unlock releases the lock. The lock file stays (removing it would race with a
// process that opened it and is waiting for the lock).
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := funlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

func readPID(path string) int {
	f, err := safeio.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	b := make([]byte, maxPIDFile+1)
	n, err := f.ReadAt(b, 0)
	if (err != nil && err != io.EOF) || n > maxPIDFile {
		return 0
	}
	b = b[:n]
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
