package budget

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privtrain/privtrain/internal/pgtest"
)

// The test binary doubles as a process that reserves and commits in a loop: with
// killChildEnv set to "STORE,COUNTER", TestMain runs killChild.
const killChildEnv = "PRIVTRAIN_BUDGET_KILL_CHILD"

func TestMain(m *testing.M) {
	if v := os.Getenv(killChildEnv); v != "" {
		store, counter, _ := strings.Cut(v, ",")
		if err := killChild(store, counter); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if v := os.Getenv(raceChildEnv); v != "" {
		if err := raceChild(v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// killChild runs reserve (10 planned steps) → r steps → commit (r) until killed, on the
// store in dir (a directory or a database URL). A step counts as run once the counter
// file holds it (the page cache survives SIGKILL).
func killChild(dir, counter string) error {
	s, err := Open(dir, testKey)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(counter, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 1))
	ran := 0
	for {
		res, err := s.Reserve(testFP, testRun("kill"), gauss(fillZ, 10), 0)
		if err != nil {
			return err
		}
		r := rng.IntN(11)
		for range r {
			ran++
			f.WriteAt(fmt.Appendf(nil, "%012d\n", ran), 0)
		}
		var ue *UnrecordedError // the database out of reach: the commit waits in a pending file
		if _, err := res.Commit(gauss0(r)); err != nil && !errors.As(err, &ue) {
			return err
		}
	}
}

// gauss0 is r steps of fillZ, or a run of no step.
func gauss0(r int) Spend {
	if r == 0 {
		return SegmentSpend("rdp", nil)
	}
	return gauss(fillZ, r)
}

// storeLoc is where a child process opens s: its directory, or its database URL.
func storeLoc(s *Store) string {
	if b, ok := s.b.(*pgBackend); ok {
		return b.url
	}
	return s.dir
}

// SIGKILL at random moments of a loop that is mostly reserving and committing (file lock,
// append, fsync, head rename; in a database: the advisory lock, the inserts, the
// transaction's commit): the store stays readable with the key and never counts fewer
// steps than ran (each trial's child adds to the count of the ones before). 30 trials
// per store, 8 with -short.
func TestKillDuringReserveAndCommit(t *testing.T) { bothStores(t, testKillDuringReserveAndCommit) }

func testKillDuringReserveAndCommit(t *testing.T) {
	trials := 30
	if testing.Short() {
		trials = 8
	}
	s := openStore(t, testKey)
	dir := storeLoc(s)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	total, torn := 0, 0
	for i := range trials {
		counter := filepath.Join(t.TempDir(), "counter")
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), killChildEnv+"="+dir+","+counter)
		var stderr strings.Builder
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		total += killAndCount(t, i, c, &stderr, counter)
		if b, err := os.ReadFile(s.ledgerPath(testFP)); !onPostgres(t) && err == nil && len(b) > 0 && b[len(b)-1] != '\n' {
			torn++
		}
		ds, err := s.Datasets(0)
		if err != nil {
			t.Fatalf("trial %d: the store cannot be read after the kill: %v", i, err)
		}
		if len(ds) == 1 && ds[0].Steps < total {
			t.Fatalf("trial %d: the store counts %d steps, %d ran", i, ds[0].Steps, total)
		}
	}
	_, runs, err := s.Runs(testFP, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d kills, %d runs recorded, %d steps ran, %d torn last lines seen", trials, len(runs), total, torn)
}

// killAndCount sends SIGKILL to child c of trial i, fails the test if it had stopped by
// itself (stderr: what it printed), and returns the steps its counter file says ran.
func killAndCount(t *testing.T, i int, c *exec.Cmd, stderr *strings.Builder, counter string) int {
	t.Helper()
	c.Process.Signal(syscall.SIGKILL)
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("trial %d: the child stopped by itself: %v\n%s", i, err, stderr.String())
	}
	b, err := os.ReadFile(counter)
	if err != nil || len(b) == 0 {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
