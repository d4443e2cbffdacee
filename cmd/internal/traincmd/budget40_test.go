package traincmd

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// Issue 40, item 7: a run with the checkpoint key set does not key the data set's ledger,
// so the unkeyed runs after it still run; only an explicit seal keys it, and then an
// unkeyed run is refused naming PRIVTRAIN_BUDGET_KEY.
func TestBudgetCheckpointKeyDoesNotLock(t *testing.T) {
	csv, store := writeBlobsCSV(t, 50), t.TempDir()
	const z = 5.0
	t.Setenv("PRIVTRAIN_CHECKPOINT_KEY", "a checkpoint key of 16+ bytes")
	mustRun(t, qOneArgs(t, csv, store, 1, z)...)
	os.Unsetenv("PRIVTRAIN_CHECKPOINT_KEY") // t.Setenv restores it
	mustRun(t, qOneArgs(t, csv, store, 1, z)...)
	d := onlyDataset(t, store) // read without any key
	if d.Runs != 2 || d.Keyed {
		t.Fatalf("store after a run with the checkpoint key and one without: %+v; want 2 runs, unkeyed", d)
	}
	// The budget key alone does not seal either.
	t.Setenv("PRIVTRAIN_BUDGET_KEY", "a budget key of 16+ bytes")
	mustRun(t, qOneArgs(t, csv, store, 1, z)...)
	os.Unsetenv("PRIVTRAIN_BUDGET_KEY")
	mustRun(t, qOneArgs(t, csv, store, 1, z)...)
	// Sealed: an unkeyed run exits 2 naming the budget key; a keyed one runs.
	s, err := budget.Open(store, []byte("a budget key of 16+ bytes"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Seal(d.Fingerprint); !ok || err != nil {
		t.Fatalf("seal: %v %v", ok, err)
	}
	code, _, stderr := runCmd(t, context.Background(), qOneArgs(t, csv, store, 1, z)...)
	if code != exit.Usage || !strings.Contains(stderr, "PRIVTRAIN_BUDGET_KEY") {
		t.Errorf("an unkeyed run on a sealed data set: exit %d\n%s", code, stderr)
	}
	t.Setenv("PRIVTRAIN_BUDGET_KEY", "a budget key of 16+ bytes")
	mustRun(t, qOneArgs(t, csv, store, 1, z)...)
	ds, err := s.Datasets(0)
	if err != nil || len(ds) != 1 || ds[0].Runs != 5 || !ds[0].Keyed {
		t.Errorf("sealed store: %+v, %v; want 5 runs, keyed", ds, err)
	}
}

// Issue 40, item 2: a checkpoint records its data set's ledger head; resuming it after the
// ledger was rolled back (its files copied back from an older backup, or the ledger cut
// and the older head kept) is refused with exit status 2, naming the rollback. A
// checkpoint without a head (written before heads were recorded) and a resume into
// another store still run.
func TestBudgetRollbackRefused(t *testing.T) {
	csv, store, dir := writeBlobsCSV(t, 50), t.TempDir(), t.TempDir()
	const z = 5.0
	a, b := filepath.Join(dir, "a.ckpt"), filepath.Join(dir, "b.ckpt")
	mustRun(t, append(qOneArgs(t, csv, store, 2, z), "-checkpoint", a)...)
	fp := onlyDataset(t, store).Fingerprint
	ledger, head := filepath.Join(store, fp+".ledger"), filepath.Join(store, fp+".head")
	oldLedger, oldHead := readFile(t, ledger), readFile(t, head)
	mustRun(t, append(qOneArgs(t, csv, store, 6, z), "-checkpoint", b)...) // the run the rollback loses
	c, err := checkpoint.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	// Written at the last epoch's end, before the run settled: the head is the run's
	// reservation (entry 2), which counts its whole plan.
	if h := c.BudgetHead; h == nil || h.Fingerprint != fp || h.Seq != 2 {
		t.Fatalf("checkpoint's budget head %+v; want entry 2 (the reservation of the second run) of data set %s", h, fp)
	}
	full, fullHead := readFile(t, ledger), readFile(t, head)
	for _, rb := range []struct {
		name         string
		ledger, head []byte
	}{{"both files copied back", oldLedger, oldHead}, {"ledger cut, older head", full[:len(oldLedger)], oldHead}} {
		t.Run(rb.name, func(t *testing.T) {
			os.WriteFile(ledger, rb.ledger, 0o600)
			os.WriteFile(head, rb.head, 0o600)
			if d := onlyDataset(t, store); d.Steps != 2 { // the store alone cannot tell
				t.Fatalf("rolled back store: %d steps, want 2", d.Steps)
			}
			code, _, stderr := runCmd(t, context.Background(), "-resume", b, "-checkpoint", filepath.Join(dir, "b2.ckpt"), "-epochs", "7", "-budget-store", store)
			if code != exit.Usage || !strings.Contains(stderr, "rollback") || !strings.Contains(stderr, fp) {
				t.Errorf("resume after a rollback: exit %d\n%s", code, stderr)
			}
			if d := onlyDataset(t, store); d.Runs != 1 {
				t.Errorf("the refused resume was recorded: %+v", d)
			}
		})
	}
	os.WriteFile(ledger, full, 0o600)
	os.WriteFile(head, fullHead, 0o600)
	// A checkpoint without a head resumes (no witness), and so does one resumed into
	// another store, whose ledger is another.
	c.BudgetHead = nil
	old := filepath.Join(dir, "old.ckpt")
	if err := checkpoint.Save(old, c); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "-resume", old, "-checkpoint", filepath.Join(dir, "old2.ckpt"), "-epochs", "7", "-budget-store", store)
	mustRun(t, "-resume", b, "-checkpoint", filepath.Join(dir, "b3.ckpt"), "-epochs", "7", "-budget-store", t.TempDir())
	mustRun(t, "-resume", b, "-checkpoint", filepath.Join(dir, "b4.ckpt"), "-epochs", "7", "-budget-store", store)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Issue 40, item 1: a lineage continued in another store is counted in full when it
// comes back: train 2 steps in S1, resume in S2 for 2 more, resume the result in S1 for
// 1 more. S1 must hold the 5 steps of the checkpoint it wrote (the 2 steps taken in S2
// imported), and -budget judges that figure: a budget between the exact ε of 3 and of 5
// steps refuses the resume (it let it through when S1 counted 2 + 1).
func TestBudgetLineageAcrossStores(t *testing.T) {
	csv, s1, s2, dir := writeBlobsCSV(t, 50), t.TempDir(), t.TempDir(), t.TempDir()
	const z = 5.0
	a, b, c := filepath.Join(dir, "a.ckpt"), filepath.Join(dir, "b.ckpt"), filepath.Join(dir, "c.ckpt")
	mustRun(t, append(qOneArgs(t, csv, s1, 2, z), "-checkpoint", a)...)
	mustRun(t, "-resume", a, "-checkpoint", b, "-epochs", "4", "-budget-store", s2)
	limit := (exactGaussianEpsilon(4, z, 1e-5) + exactGaussianEpsilon(5, z, 1e-5)) / 2
	code, _, stderr := runCmd(t, context.Background(), "-resume", b, "-checkpoint", filepath.Join(dir, "refused.ckpt"), "-epochs", "5", "-budget-store", s1, "-budget", fmt.Sprint(limit))
	if code != exit.Usage || !strings.Contains(stderr, "refused before the first step") {
		t.Errorf("-budget %v (between the ε of 4 and 5 steps) on the lineage's 5th step: exit %d\n%s", limit, code, stderr)
	}
	mustRun(t, "-resume", b, "-checkpoint", c, "-epochs", "5", "-budget-store", s1)
	d := onlyDataset(t, s1)
	ck, err := checkpoint.Load(c)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Ledger.Steps() != 5 || d.Steps != 5 {
		t.Errorf("S1 holds %d steps, the checkpoint it wrote %d; want 5 and 5", d.Steps, ck.Ledger.Steps())
	}
	checkGaussian(t, "S1 after the lineage came back", d.Composition, 5, z)
	// Resuming the same checkpoint in S1 again imports nothing more: S1 holds its steps.
	mustRun(t, "-resume", c, "-checkpoint", filepath.Join(dir, "d.ckpt"), "-epochs", "6", "-budget-store", s1)
	if d := onlyDataset(t, s1); d.Steps != 6 {
		t.Errorf("S1 after one more step: %d steps, want 6", d.Steps)
	}
}

// Issue 40, item 8: the number of trials and the best trial's index, which the search's
// ε does not cover (docs/tuning.md), are kept off the released lines of -tune's summary
// and marked as not covered by ε, in text and in -json.
func TestTuneSummaryMarksUncovered(t *testing.T) {
	args := append(slices.Clone(tinySearch), "-batch", "512", "-noise", "3", "-no-checkpoint", "-budget-store", t.TempDir(), "-tune", "lr=1,2;trials=poisson:mean=2")
	code, out, stderr := runCmd(t, context.Background(), args...)
	if code != exit.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	nc, _ := raw["not_covered_by_epsilon"].([]any)
	if !slices.Contains(nc, any("trials")) || !slices.Contains(nc, any("best_trial")) {
		t.Errorf("-json: not_covered_by_epsilon = %v; want it to name trials and best_trial\n%s", raw["not_covered_by_epsilon"], out)
	}
	code, out, stderr = runCmd(t, context.Background(), slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "-json" })...)
	if code != exit.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "best:") && strings.Contains(line, "trial") {
			t.Errorf("the released best line names a trial: %q", line)
		}
	}
	if !strings.Contains(out, "not covered by ε") || !strings.Contains(out, "trials drawn") {
		t.Errorf("the text summary does not mark the trial count as not covered by ε:\n%s", out)
	}
}

// Issue 40, item 8: one run reports its spend by one accountant, named, everywhere: with
// -accountant pld the plan, the budget's start line, the settled line and the summary
// agree (the store's PLD within 1 % of the run's, a different discretisation), where the
// start line used to give the RDP bound (ε = 3.25 against the plan's 3.00); with
// -accountant rdp every line is the RDP bound. The summary names the data set's figure
// apart from the run's.
func TestBudgetOneAccountant(t *testing.T) {
	csv := writeBlobsCSV(t, 50)
	for _, acct := range []string{"pld", "rdp"} {
		t.Run(acct, func(t *testing.T) {
			args := append(qOneArgs(t, csv, t.TempDir(), 8, 2), "-accountant", acct, "-json")
			code, out, stderr := runCmd(t, context.Background(), args...)
			if code != exit.OK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			var sum summary
			if err := json.Unmarshal([]byte(out), &sum); err != nil {
				t.Fatal(err)
			}
			run := *sum.Epsilon
			var start, settled float64
			var startMethod, settledMethod string
			for _, line := range strings.Split(stderr, "\n") {
				if _, after, ok := strings.Cut(line, "with this run's plan ε = "); ok {
					fmt.Sscanf(after, "%g at δ = 1e-05 (%3s)", &start, &startMethod)
				}
				if _, after, ok := strings.Cut(line, "settled at ε = "); ok {
					fmt.Sscanf(after, "%g at δ = 1e-05 (%3s)", &settled, &settledMethod)
				}
			}
			if startMethod != acct || settledMethod != acct || math.Abs(start-run) > 0.01*run || math.Abs(settled-run) > 0.01*run {
				t.Errorf("run ε = %v (%s); budget start line ε = %v (%s), settled ε = %v (%s): want all by %s, within 1 %%\n%s", run, sum.Accountant, start, startMethod, settled, settledMethod, acct, stderr)
			}
			if d := sum.DatasetSpend; d == nil || d.Epsilon == nil || *d.Epsilon != settled && math.Abs(*d.Epsilon-settled) > 1e-3*settled || d.Method != acct {
				t.Errorf("summary's data set budget %+v; want the settled ε = %v (%s)", d, settled, acct)
			}
		})
	}
}
