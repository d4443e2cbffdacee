package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.bin")
	if err := Write(path, 0o644, func(w io.Writer) error { _, err := w.Write([]byte("new")); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "new" {
		t.Fatalf("content %q, %v", b, err)
	}

	// A failing writer leaves the old file and no temporary file behind.
	boom := errors.New("boom")
	err := Write(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("old file changed to %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only f.bin", len(entries))
	}
	if err := Write(filepath.Join(dir, "missing", "f"), 0o644, func(io.Writer) error { return nil }); err == nil {
		t.Error("write into a missing directory: no error")
	}
}

// deadPid returns the pid of a process that has exited (and been waited for).
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper process: %v", err)
	}
	return cmd.Process.Pid
}

// TestWriteRemovesStaleTemporaries lays out the leftovers of killed writers, and files
// that only look like them, and checks that a successful Write removes exactly the
// stale temporaries of its own path.
func TestWriteRemovesStaleTemporaries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.bin")
	dead, self, parent := deadPid(t), os.Getpid(), os.Getppid()
	if !processGone(dead) {
		t.Skipf("pid %d was reused already", dead)
	}
	other := "0123abcd"
	if other == processToken {
		other = "0123abce"
	}
	long := time.Now().Add(-2 * StaleAge)
	files := []struct {
		name   string
		old    bool
		remove bool
	}{
		{fmt.Sprintf(".f.bin.tmp-%d.%s-123", dead, other), false, true},         // killed writer
		{fmt.Sprintf(".f.bin.tmp-%d.%s-456", self, other), false, true},         // earlier process, same pid
		{fmt.Sprintf(".f.bin.tmp-%d.%s-789", self, processToken), false, false}, // a concurrent Write in this process
		{fmt.Sprintf(".f.bin.tmp-%d.%s-790", self, processToken), false, true},  // a Write of this process that panicked
		{fmt.Sprintf(".f.bin.tmp-%d.%s-111", parent, other), false, false},      // a live writer elsewhere
		{fmt.Sprintf(".f.bin.tmp-%d.%s-222", parent, other), true, true},        // … that has been at it for hours
		{".f.bin.tmp-3141592", false, false},                                    // an older release's name, recent
		{".f.bin.tmp-2718281", true, true},                                      // … and abandoned
		{fmt.Sprintf(".g.bin.tmp-%d.%s-123", dead, other), true, false},         // another path's
		{fmt.Sprintf(".f.bin.tmp-%d.%s-1.tmp-9", dead, other), true, false},     // not this pattern
		{fmt.Sprintf(".f.bin.tmp-5.tmp-%d.%s-1", dead, other), true, false},     // path "f.bin.tmp-5"'s
		{fmt.Sprintf("f.bin.tmp-%d.%s-123", dead, other), true, false},          // no leading dot
		{fmt.Sprintf(".f.bin.tmp-%d.%s-12x", dead, other), true, false},         // not digits
		{fmt.Sprintf(".f.bin.tmp-%d.%s-123", dead, "0123ABCD"), true, false},    // not our token form
	}
	writing := filepath.Join(dir, fmt.Sprintf(".f.bin.tmp-%d.%s-789", self, processToken))
	live.Store(writing, true)
	defer live.Delete(writing)
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if f.old {
			if err := os.Chtimes(p, long, long); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := Write(path, 0o644, func(w io.Writer) error { _, err := w.Write([]byte("v")); return err }); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if gone := errors.Is(err, os.ErrNotExist); gone != f.remove {
			t.Errorf("%s: removed %v, want %v", f.name, gone, f.remove)
		}
	}
	// A failed Write removes nothing.
	stale := filepath.Join(dir, fmt.Sprintf(".f.bin.tmp-%d.%s-5", dead, other))
	os.WriteFile(stale, nil, 0o600)
	Write(path, 0o644, func(io.Writer) error { return errors.New("boom") })
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("a failed Write removed %s: %v", stale, err)
	}
}

// TestWriteConcurrentRelative: two Writes of the same relative path ("c.ckpt", as a
// command run in its working directory names it) overlap in one process; the one that
// finishes first must not take the other's temporary file for a stale one.
func TestWriteConcurrentRelative(t *testing.T) {
	t.Chdir(t.TempDir())
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- Write("c.ckpt", 0o644, func(w io.Writer) error {
			close(started)
			<-release
			_, err := w.Write([]byte("first"))
			return err
		})
	}()
	<-started
	if err := Write("c.ckpt", 0o644, func(w io.Writer) error {
		_, err := w.Write([]byte("second"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the overlapping Write failed: %v", err)
	}
	if b, err := os.ReadFile("c.ckpt"); err != nil || string(b) != "first" {
		t.Errorf("c.ckpt = %q (%v), want the later rename's \"first\"", b, err)
	}
}
