// Package filelock holds advisory, process-wide locks on files (flock(2) on Unix): the
// lock of a checkpoint path for a training run's life, and the lock of a budget store
// while an entry is appended. The kernel drops a lock when its holder exits, kill -9
// included, so a crashed process never leaves a stale lock behind. The lock file holds
// the holder's pid (text) so that a refused caller can name it.
package filelock

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
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
func TryLock(path string) (*Lock, error) { return lock(path, false) }

// Wait takes the exclusive lock of path, waiting for its holder to release it; it does
// not write the pid (the store's lock file is not the store's data).
func Wait(path string) (*Lock, error) { return lock(path, true) }

func lock(path string, wait bool) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
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
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
	}
	return l, nil
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
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 32 {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
