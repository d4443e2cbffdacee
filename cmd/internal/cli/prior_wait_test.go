package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/internal/filelock"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/prior"
)

// lockedBuffer is a bytes.Buffer that a test reads while another goroutine writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func priorSpec(seed uint64) nn.Spec {
	return nn.Spec{Name: "w", InputShape: []int{1, 8, 8}, NumClasses: 2, Layers: []layers.Layer{
		layers.Whitened{
			Base:  []layers.Layer{layers.Scattering2D{J: 1, L: 2}, layers.GroupNorm{Groups: 1, NoAffine: true}, layers.Flatten{}},
			Prior: prior.DeadLeaves{Scenes: 300, Seed: seed},
			Floor: 0.01,
		},
		layers.Dense{Units: 2},
	}}
}

// until waits (without a time limit of its own: the test's) for cond.
func until(cond func() bool) {
	for !cond() {
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPreparePriorsWaitsForTheHolder (issue 41): while another process holds the lock
// of the map's cache file (a lock taken here, on another open file: the kernel refuses
// it alike), PreparePriorsContext says whom it waits for and computes nothing; once the
// holder has written the map and let go, it loads it. Cancelled while waiting, it stops
// with the context's error.
func TestPreparePriorsWaitsForTheHolder(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(prior.CacheEnv, dir)
	// The file name: computed once under another cache directory, then moved here.
	other := t.TempDir()
	t.Setenv(prior.CacheEnv, other)
	var first bytes.Buffer
	if err := cli.PreparePriors(priorSpec(21), &first); err != nil {
		t.Fatal(err)
	}
	maps, _ := filepath.Glob(filepath.Join(other, "whitening-*.map"))
	if len(maps) != 1 {
		t.Fatalf("maps %v", maps)
	}
	t.Setenv(prior.CacheEnv, dir)
	file := filepath.Join(dir, filepath.Base(maps[0]))
	lock, err := filelock.TryLock(file + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	prior.ForgetMaps() // a new process: nothing in memory
	var out lockedBuffer
	done := make(chan error, 1)
	go func() { done <- cli.PreparePriorsContext(context.Background(), priorSpec(21), &out) }()
	want := fmt.Sprintf("waiting for process %d computing the whitening map", os.Getpid())
	until(func() bool { return strings.Contains(out.String(), want) })
	if err := os.Rename(maps[0], file); err != nil { // the holder writes the map
		t.Fatal(err)
	}
	lock.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "loaded from "+file) || strings.Contains(s, "images, no data") {
		t.Errorf("after waiting it says\n%s\nwant the map loaded, not computed", s)
	}

	// Cancelled while waiting.
	prior.ForgetMaps()
	os.Remove(file)
	lock, err = filelock.TryLock(file + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	var out2 lockedBuffer
	go func() { done <- cli.PreparePriorsContext(ctx, priorSpec(21), &out2) }()
	until(func() bool { return strings.Contains(out2.String(), "waiting for process") })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("cancelled while waiting: %v, want an interruption wrapping context.Canceled", err)
	}
}

// TestPreparePriorsLines (issue 41): with the intervals made small, a computation
// prints lines per phase with how far it came, its percentage and the time left — what
// a log file, not a terminal, shows.
func TestPreparePriorsLines(t *testing.T) {
	t.Setenv(prior.CacheEnv, t.TempDir())
	defer cli.SetPriorIntervals(0, 3*time.Millisecond)()
	prior.ForgetMaps()
	var out lockedBuffer
	if err := cli.PreparePriorsContext(context.Background(), priorSpec(22), &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"covariance: 512 of 600 images, 85% (", "inverse square root: 0 of ", " products, 0% (", "about ", " s left)"} {
		if !strings.Contains(s, want) {
			t.Errorf("says\n%s\nwithout %q", s, want)
		}
	}
}
