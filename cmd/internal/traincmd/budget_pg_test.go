package traincmd

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/internal/pgsql"
	"github.com/privtrain/privtrain/internal/pgtest"
)

// The test binary opens database stores with internal/pgsql, as train built with the tag
// postgres does (its child processes too).
func init() { budget.RegisterPostgres(pgsql.Connect) }

func pgDataset(t *testing.T, url string) budget.Dataset {
	t.Helper()
	s, err := budget.Open(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds, err := s.Datasets(0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("%+v, %v: want one data set", ds, err)
	}
	return ds[0]
}

// Issue 43: train with -budget-store postgres://…: two processes at once on one data set
// leave two settled runs whose composition is the closed form of their 2×5 Gaussian
// steps; a run whose database connections are all cut mid-run keeps training, and its
// commit reconnects and settles it; an unreachable database refuses the run (exit 2),
// naming the URL without its password.
func TestBudgetPostgresStore(t *testing.T) {
	srv := pgtest.Require(t)
	url := srv.NewDatabase(t)
	csv := writeBlobsCSV(t, 50)
	const z = 5.0
	cmds := make([]*strings.Builder, 2)
	var running []func() error
	for i := range cmds {
		c := child(t, "", qOneArgs(t, csv, url, 5, z)...)
		cmds[i] = &strings.Builder{}
		c.Stderr = cmds[i]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		running = append(running, c.Wait)
	}
	for i, wait := range running {
		if err := wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, cmds[i])
		}
		if out := cmds[i].String(); !strings.Contains(out, "in "+url) || !strings.Contains(out, "settled at ε = ") {
			t.Errorf("process %d does not report the database store's spend:\n%s", i, out)
		}
	}
	d := pgDataset(t, url)
	if d.Runs != 2 || d.Unsettled != 0 || d.Steps != 10 {
		t.Errorf("%d runs (%d unsettled), %d steps; want 2 settled runs of 5 steps", d.Runs, d.Unsettled, d.Steps)
	}
	checkGaussian(t, "2 processes", d.Composition, 10, z)

	// Every connection to the database cut while the run trains.
	steps := filepath.Join(t.TempDir(), "steps")
	const epochs = 3000
	c := child(t, steps, qOneArgs(t, csv, url, epochs, 50)...)
	var out strings.Builder
	c.Stderr = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(steps)
		if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no step after 2 minutes:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	var cut int
	if err := admin.QueryRow(context.Background(), "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").Scan(&cut); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("the run whose connection was cut: %v\n%s", err, out.String())
	}
	b, _ := os.ReadFile(steps)
	if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); cut == 0 || n != epochs {
		t.Fatalf("cut %d connections; the run took %d steps of %d", cut, n, epochs)
	}
	if d := pgDataset(t, url); d.Runs != 3 || d.Unsettled != 0 || d.Steps != 10+epochs {
		t.Errorf("after the cut: %d runs (%d unsettled), %d steps; want 3 settled runs, %d steps\n%s", d.Runs, d.Unsettled, d.Steps, 10+epochs, out.String())
	}

	// An unreachable database.
	bad := "postgres://alice:s3cret-pw@127.0.0.1:1/ledger"
	c = child(t, "", qOneArgs(t, csv, bad, 5, z)...)
	outb, err := c.CombinedOutput()
	if code := c.ProcessState.ExitCode(); code != 2 || strings.Contains(string(outb), "s3cret-pw") || !strings.Contains(string(outb), "postgres://alice@127.0.0.1:1/ledger") {
		t.Errorf("an unreachable database: exit %d (%v)\n%s", code, err, outb)
	}
}
