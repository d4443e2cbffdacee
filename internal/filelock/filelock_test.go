package filelock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTryLockRefusesSecondHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file description: a second open in this process
	// is refused like another process would be.
	_, err = TryLock(path)
	var held *HeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second TryLock: %v, want a HeldError", err)
	}
	if held.PID != os.Getpid() {
		t.Errorf("holder pid %d, want %d", held.PID, os.Getpid())
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := TryLock(path)
	if err != nil {
		t.Fatalf("after Unlock: %v", err)
	}
	l2.Unlock()
}

// TestKilledHolderReleases: a child process takes the lock and is killed with SIGKILL;
// the lock is free afterwards (the kernel releases it), and while the child held it the
// refusal named the child's pid.
func TestKilledHolderReleases(t *testing.T) {
	if os.Getenv("FILELOCK_CHILD") != "" {
		if _, err := TryLock(os.Getenv("FILELOCK_CHILD")); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledHolderReleases$")
	cmd.Env = append(os.Environ(), "FILELOCK_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "locked") {
		cmd.Process.Kill()
		t.Fatalf("child did not lock: %q", buf[:n])
	}
	_, err = TryLock(path)
	var held *HeldError
	if !errors.As(err, &held) || held.PID != cmd.Process.Pid {
		t.Errorf("while the child holds it: %v, want held by %d", err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := TryLock(path)
	if err != nil {
		t.Fatalf("after kill -9: %v", err)
	}
	defer l.Unlock()
	b, _ := os.ReadFile(path)
	if strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q, want our pid", b)
	}
}

func TestWaitWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := Wait(path)
		if err == nil {
			l2.Unlock()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Wait returned while the lock was held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	l.Unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
