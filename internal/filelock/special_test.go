package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/internal/safeio/safeiotest"
)

// TestLockFollowsNoLinks: a lock file that is a symbolic link (to a file of someone
// else's), a FIFO or a device node is refused, by TryLock and Wait, without following
// the link, blocking on the FIFO or writing anything. Before, a symbolic link at
// m.ckpt.lock truncated its target and wrote a pid into it, and a FIFO blocked the open
// for ever.
func TestLockFollowsNoLinks(t *testing.T) {
	dir := t.TempDir()
	specials := safeiotest.Specials(t, dir, "x.lock.*")
	for _, sp := range specials.List {
		for name, lock := range map[string]func(string) (*Lock, error){"TryLock": TryLock, "Wait": Wait} {
			l, err := lock(sp.Path)
			if err == nil {
				l.Unlock()
			}
			if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), sp.Path) {
				t.Errorf("%s of a %s: %v, want ErrNotRegular naming it", name, sp.Name, err)
			}
		}
	}
	specials.Unchanged(t)
}

// TestLockTruncatesNothing: TryLock writes its pid into a lock file of its own kind
// (empty, or a pid) without truncating it, and refuses a file that holds anything else
// (a lock path that names some other file by mistake or by malice) and a file with
// another hard link, leaving them as they were.
func TestLockTruncatesNothing(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "notes.txt")
	const text = "not a lock file: 12 lines of someone's notes\n"
	os.WriteFile(other, []byte(text), 0o600)
	if l, err := TryLock(other); err == nil {
		l.Unlock()
		t.Errorf("TryLock of a file holding text: no error")
	}
	linked := filepath.Join(dir, "linked.lock")
	os.WriteFile(filepath.Join(dir, "data"), nil, 0o600)
	if err := os.Link(filepath.Join(dir, "data"), linked); err != nil {
		t.Fatal(err)
	}
	if l, err := TryLock(linked); err == nil {
		l.Unlock()
		t.Errorf("TryLock of a file with two hard links: no error")
	}
	if b, _ := os.ReadFile(other); string(b) != text {
		t.Errorf("the refused file now holds %q", b)
	}
	if b, _ := os.ReadFile(linked); len(b) != 0 {
		t.Errorf("the hard-linked file now holds %q", b)
	}
	// An old lock file with a longer pid of an earlier holder: read back as our pid.
	old := filepath.Join(dir, "old.lock")
	os.WriteFile(old, []byte("4194303\n"), 0o644)
	l, err := TryLock(old)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if pid := readPID(old); pid != os.Getpid() {
		t.Errorf("after TryLock the lock file names pid %d, want %d", pid, os.Getpid())
	}
}
