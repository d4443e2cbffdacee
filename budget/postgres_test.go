package budget

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/privtrain/privtrain/internal/pgtest"
)

// The test binary doubles as a process that reserves and commits under a budget: with
// raceChildEnv set to "STORE,OUT,BUDGET", TestMain runs raceChild.
const raceChildEnv = "PRIVTRAIN_BUDGET_RACE_CHILD"

// raceRun is the plan of every run of raceChild: 10 Gaussian steps at z = fillZ.
const raceSteps = 10

// raceChild reserves raceSteps steps with the budget, commits them all, and again, until
// a reservation is refused as over the budget; it writes how many runs it committed to
// OUT.
func raceChild(v string) error {
	parts := strings.Split(v, ",")
	if len(parts) != 3 {
		return fmt.Errorf("%s=%q", raceChildEnv, v)
	}
	budget, err := strconv.ParseFloat(parts[2], 64)
	if err != nil {
		return err
	}
	s, err := Open(parts[0], nil)
	if err != nil {
		return err
	}
	defer s.Close()
	runs := 0
	for {
		r, err := s.Reserve(testFP, testRun("race"), gauss(fillZ, raceSteps), budget)
		if errors.Is(err, ErrOverBudget) {
			return os.WriteFile(parts[1], []byte(strconv.Itoa(runs)), 0o600)
		}
		if err != nil {
			return err
		}
		if _, err := r.Commit(gauss(fillZ, raceSteps)); err != nil {
			return err
		}
		runs++
	}
}

// Eight processes, each with its own store handle (its own connection to the database),
// reserve and commit on one data set under one budget until refused: every step that a
// process committed is in the store, nothing is unsettled, and the data set's ε, by the
// Gaussian's exact closed form of its steps (q = 1: T steps at z are one Gaussian of
// σ = z/√T), is within the budget; and the budget was used: one more run would pass it.
func TestConcurrentReservations(t *testing.T) { bothStores(t, testConcurrentReservations) }

func testConcurrentReservations(t *testing.T) {
	const procs = 8
	s := openStore(t, nil)
	budget := gaussianEpsilon(fillZ/math.Sqrt(165), 1e-5) // room for about 16 runs
	var cmds []*exec.Cmd
	outs := make([]strings.Builder, procs)
	files := make([]string, procs)
	for i := range procs {
		files[i] = filepath.Join(t.TempDir(), "runs")
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%v", raceChildEnv, storeLoc(s), files[i], budget))
		c.Stderr = &outs[i]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	runs := 0
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i].String())
		}
		b, err := os.ReadFile(files[i])
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(string(b))
		runs += n
	}
	ds, err := s.Datasets(0)
	if err != nil {
		t.Fatal(err)
	}
	d := ds[0]
	if d.Steps != raceSteps*runs || d.Unsettled != 0 || d.Runs != runs {
		t.Errorf("the store holds %d runs (%d unsettled), %d steps; the processes committed %d runs of %d steps", d.Runs, d.Unsettled, d.Steps, runs, raceSteps)
	}
	if exact := gaussianEpsilon(fillZ/math.Sqrt(float64(d.Steps)), 1e-5); !(exact <= budget) || !(d.Epsilon <= budget) {
		t.Errorf("%d steps: exact ε = %v, the store's %v; the budget %v was exceeded", d.Steps, exact, d.Epsilon, budget)
	}
	more, err := Compose([]Spend{gauss(fillZ, d.Steps+raceSteps)}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !(more.Epsilon > budget) {
		t.Errorf("every process was refused, yet one more run (ε = %v) fits the budget %v", more.Epsilon, budget)
	}
	t.Logf("%d processes committed %d runs, %d steps: ε = %.4g (%s) within the budget %.4g", procs, runs, d.Steps, d.Epsilon, d.Method, budget)
}

// pgStore is a database store of its own (skipped without PostgreSQL).
func pgStore(t *testing.T, key []byte) *Store {
	t.Helper()
	url, schema := pgURL(t)
	return openPG(t, url, schema, key)
}

// An unreachable server refuses to open the store, with an error naming the URL without
// its password.
func TestPostgresUnreachable(t *testing.T) {
	for _, u := range []string{"postgres://alice:s3cret-pw@127.0.0.1:1/ledger", "postgresql://127.0.0.1:1/ledger?user=alice&password=s3cret-pw"} {
		_, err := Open(u, nil)
		if err == nil {
			t.Fatalf("%s: opened", u)
		}
		if msg := err.Error(); strings.Contains(msg, "s3cret-pw") || !strings.Contains(msg, "127.0.0.1:1/ledger") {
			t.Errorf("%s: %q: want the URL without its password", u, msg)
		}
	}
	if got := RedactURL("postgres://alice:pw@db.example/ledger?sslmode=require&password=pw"); got != "postgres://alice@db.example/ledger?sslmode=require" {
		t.Errorf("redacted: %q", got)
	}
}

// A connection cut between the reservation and the commit: the commit reconnects and is
// made. Then a database out of reach for every retry: the commit says how many steps are
// unrecorded and that the reservation over-counts them, keeps the commit in a pending
// file, and the next store opened on the database delivers it (once).
func TestPostgresCommitRetriesAndPending(t *testing.T) {
	s := pgStore(t, nil)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	defer func(d []time.Duration) { retryDelays = d }(retryDelays)
	retryDelays = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}
	b := s.b.(*pgBackend)
	cut := func() {
		t.Helper()
		var pid int32
		if err := b.conn.Query(context.Background(), "SELECT pg_backend_pid()", nil, func(scan func(...any) error) error { return scan(&pid) }); err != nil {
			t.Fatal(err)
		}
		ownerExec(t, "SELECT pg_terminate_backend($1)", pid)
	}
	r, err := s.Reserve(testFP, testRun("a"), gauss(fillZ, 10), 0)
	if err != nil {
		t.Fatal(err)
	}
	cut()
	if _, err := r.Commit(gauss(fillZ, 7)); err != nil {
		t.Fatalf("a commit after the connection was cut: %v", err)
	}
	r, err = s.Reserve(testFP, testRun("a"), gauss(fillZ, 10), 0)
	if err != nil {
		t.Fatal(err)
	}
	good := b.url
	b.url = "postgres://alice:s3cret-pw@127.0.0.1:1/ledger"
	cut()
	_, err = r.Commit(gauss(fillZ, 4))
	b.url = good
	var ue *UnrecordedError
	if !errors.As(err, &ue) || ue.Steps != 4 || ue.Planned != 10 || ue.Pending == "" {
		t.Fatalf("a commit with the database out of reach: %v; want 4 unrecorded steps, 10 reserved, a pending file", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "4 steps") || !strings.Contains(msg, "over-count") || strings.Contains(msg, "s3cret-pw") {
		t.Errorf("the message: %q", msg)
	}
	dir, _ := PendingDir()
	if filepath.Dir(ue.Pending) != dir {
		t.Errorf("pending file %s, not in %s", ue.Pending, dir)
	}
	ds, err := s.Datasets(0)
	if err != nil || ds[0].Steps != 7+10 || ds[0].Unsettled != 1 {
		t.Fatalf("before the delivery: %+v, %v; want 17 steps, one run unsettled at its reservation", ds, err)
	}
	s2 := reopen(t, s, nil)
	said, err := s2.DeliverPending()
	if err != nil || len(said) != 1 || !strings.Contains(said[0], "delivered") {
		t.Fatalf("delivery: %q, %v", said, err)
	}
	if _, err := os.Stat(ue.Pending); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pending file stays after its delivery: %v", err)
	}
	ds, err = s2.Datasets(0)
	if err != nil || ds[0].Steps != 7+4 || ds[0].Unsettled != 0 {
		t.Fatalf("after the delivery: %+v, %v; want 11 steps, all settled", ds, err)
	}
	if said, err := s2.DeliverPending(); err != nil || len(said) != 0 {
		t.Errorf("a second delivery: %q, %v", said, err)
	}
}

// A restart of the server (pg_ctl restart -m fast) while a process reserves and commits
// in a loop: the process carries on (its reservations and commits retry on a new
// connection, or a commit goes to its pending file), the ledger stays readable and never
// counts fewer steps than ran; after the pending commits are delivered, exactly... at
// least as many. 5 trials, 2 with -short.
func TestPostgresRestartDuringRun(t *testing.T) {
	srv := pgtest.Require(t)
	trials := 5
	if testing.Short() {
		trials = 2
	}
	s := pgStore(t, testKey)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	total := 0
	for i := range trials {
		counter := filepath.Join(t.TempDir(), "counter")
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), killChildEnv+"="+storeLoc(s)+","+counter)
		var stderr strings.Builder
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		if err := srv.Restart(); err != nil {
			c.Process.Kill()
			t.Fatal(err)
		}
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond) // it carries on
		total += killAndCount(t, i, c, &stderr, counter)
		ownerMu.Lock()
		if ownerConn != nil {
			ownerConn.Close(context.Background())
			ownerConn = nil
		}
		ownerMu.Unlock()
		ds, err := s.Datasets(0)
		if err != nil {
			t.Fatalf("trial %d: the store cannot be read after the restart: %v", i, err)
		}
		if len(ds) == 1 && ds[0].Steps < total {
			t.Fatalf("trial %d: the store counts %d steps, %d ran", i, ds[0].Steps, total)
		}
	}
	said, err := s.DeliverPending()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.Datasets(0)
	if err != nil || ds[0].Steps < total {
		t.Fatalf("after delivering %d pending commits: %+v, %v; %d steps ran", len(said), ds, err, total)
	}
	t.Logf("%d restarts: %d steps ran, %d counted, %d commits delivered from pending files", trials, total, ds[0].Steps, len(said))
}

// The append-only role of docs/budget.md (SELECT and INSERT on the two tables, nothing
// else) runs reservations, commits and seals; it may neither update nor delete a row.
func TestPostgresAppendOnlyRole(t *testing.T) {
	s := pgStore(t, testKey)
	fill(t, s) // the owner's store creates the tables
	schema := schemas[s]
	role := "runs_" + schema
	ownerExec(t, "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() {
		owner(t).Exec(context.Background(), "DROP OWNED BY "+role)
		owner(t).Exec(context.Background(), "DROP ROLE "+role)
	})
	// The grants of docs/budget.md, in the test's schema.
	ownerExec(t, "GRANT USAGE ON SCHEMA "+schema+" TO "+role)
	ownerExec(t, fmt.Sprintf("GRANT SELECT, INSERT ON %[1]s.privtrain_budget_entries, %[1]s.privtrain_budget_heads TO %[2]s", schema, role))
	url := strings.Replace(s.b.(*pgBackend).url, "postgres://postgres@", "postgres://"+role+"@", 1)
	a := openPG(t, url, schema, testKey)
	r, err := a.Reserve(testFP, testRun("a"), gauss(fillZ, 3), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(gauss(fillZ, 2)); err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("e", 64)
	if ok, err := a.Seal(other); !ok || err != nil {
		t.Fatalf("seal as the append-only role: %v, %v", ok, err)
	}
	ds, err := a.Datasets(0)
	if err != nil || len(ds) != 1 || ds[0].Steps != 15+2 {
		t.Fatalf("%+v, %v", ds, err)
	}
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, q := range []string{
		"UPDATE privtrain_budget_entries SET line = line",
		"DELETE FROM privtrain_budget_entries",
		"UPDATE privtrain_budget_heads SET seq = seq",
		"DELETE FROM privtrain_budget_heads",
		"TRUNCATE privtrain_budget_entries",
	} {
		if _, err := c.Exec(context.Background(), q); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("%s as the append-only role: %v, want permission denied", q, err)
		}
	}
}

// An append that the database refuses (here a head row already at the next position:
// the primary key) rolls the whole transaction back: the failed reservation leaves no
// entry, as in a store directory (TestFailedReservationLeavesNothing).
func TestPostgresFailedAppendLeavesNothing(t *testing.T) {
	s := pgStore(t, nil)
	fill(t, s)
	before := lines(t, s)
	ownerExec(t, "INSERT INTO "+schemas[s]+".privtrain_budget_heads VALUES ($1, 4, $2, 'sha256', $2)", testFP, strings.Repeat("0", 64))
	if _, err := s.Reserve(testFP, testRun("a"), gauss(fillZ, 5), 0); err == nil {
		t.Fatal("a reservation whose head row could not be inserted succeeded")
	} else if retryable(err) {
		t.Errorf("a refused insert is retried: %v", err)
	}
	if n := len(lines(t, s)); n != len(before) {
		t.Errorf("%d entries after the failed reservation, want %d", n, len(before))
	}
}

// BenchmarkPostgresReserveCommit is a reservation and its commit on the local test server
// (fsync on), on ledgers of up to 100 entries: docs/budget.md reports it. With
// accountant=pld (a run's default: the commit reports the data set's PLD bound) the pair
// includes composing the PLD, which takes most of its CPU time; accountant=rdp is the
// pair with the RDP bound only, mostly the store's own work. BenchmarkFileReserveCommit
// is the same on a store directory, for comparison.
func BenchmarkPostgresReserveCommit(b *testing.B) {
	pgtest.Require(b)
	for _, acct := range []string{"rdp", "pld"} {
		b.Run("accountant="+acct, func(b *testing.B) {
			url, schema := pgURL(b)
			benchReserveCommit(b, openPG(b, url, schema, nil), acct)
		})
	}
}

func BenchmarkFileReserveCommit(b *testing.B) {
	for _, acct := range []string{"rdp", "pld"} {
		b.Run("accountant="+acct, func(b *testing.B) {
			s, err := Open(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			benchReserveCommit(b, s, acct)
		})
	}
}

func benchReserveCommit(b *testing.B, s *Store, acct string) {
	i := 0
	run := testRun("bench")
	run.Accountant = acct
	for b.Loop() {
		h := sha256.Sum256([]byte(strconv.Itoa(i / 50))) // a new data set every 50 runs
		i++
		r, err := s.Reserve(hex.EncodeToString(h[:]), run, gauss(fillZ, 10), 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Commit(gauss(fillZ, 10)); err != nil {
			b.Fatal(err)
		}
	}
}
