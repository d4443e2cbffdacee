package training_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/training"
)

// The budget tests train with q = 1 (a batch of the whole set): each step is the Gaussian
// mechanism with multiplier z, and T of them compose to one with σ = z/√T, whose RDP is
// Tα/(2z²) (Mironov 2017). gaussianRDPEpsilon converts it by Balle et al. 2020 (Theorem
// 21) at the orders 1.1…10.9 (step 0.1) and 12…256: written here from the closed form,
// sharing no code with the accountant.
const (
	budgetN     = 40
	budgetZ     = 3.0
	budgetDelta = 1e-5
)

func gaussianRDPEpsilon(T int, z, delta float64) float64 {
	var orders []float64
	for i := 11; i <= 109; i++ {
		orders = append(orders, float64(i)/10)
	}
	for a := 12; a <= 256; a++ {
		orders = append(orders, float64(a))
	}
	best := math.Inf(1)
	for _, a := range orders {
		r := float64(T) * a / (2 * z * z)
		best = min(best, r+math.Log((a-1)/a)-(math.Log(delta)+math.Log(a))/(a-1))
	}
	return best
}

// gaussianDelta is the exact δ(ε) of the Gaussian mechanism with σ = z/√T (Balle and
// Wang 2018, Theorem 8): Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ).
func gaussianDelta(T int, z, eps float64) float64 {
	sigma := z / math.Sqrt(float64(T))
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	return phi(1/(2*sigma)-eps*sigma) - math.Exp(eps)*phi(-1/(2*sigma)-eps*sigma)
}

// checkBound checks a composition of T Gaussian steps by any method (the listings report
// the smaller of the RDP and PLD bounds): an upper bound (the exact δ at its ε is at
// most δ), at most the RDP bound, and tight to 0.3 % (the PLD's discretisation).
func checkBound(t *testing.T, what string, c budget.Composition, T int) {
	t.Helper()
	rdp := gaussianRDPEpsilon(T, budgetZ, budgetDelta)
	if c.Delta != budgetDelta || gaussianDelta(T, budgetZ, c.Epsilon) > budgetDelta*(1+1e-9) || c.Epsilon > rdp*(1+1e-9) ||
		gaussianDelta(T, budgetZ, c.Epsilon/1.003) <= budgetDelta {
		t.Errorf("%s: ε = %v at δ = %v (%s); want an upper bound on the exact ε of %d Gaussian steps with z = %v at δ = %v, within 0.3 %% of it and at most the RDP bound %v",
			what, c.Epsilon, c.Delta, c.Method, T, budgetZ, budgetDelta, rdp)
	}
}

// checkSteps checks a composition of T Gaussian steps (q = 1, z = budgetZ) by the RDP
// bound against the closed form.
func checkSteps(t *testing.T, what string, c budget.Composition, T int) {
	t.Helper()
	want := gaussianRDPEpsilon(T, budgetZ, budgetDelta)
	if c.Method != "rdp" || c.Delta != budgetDelta || math.Abs(c.Epsilon-want) > 1e-9*want {
		t.Errorf("%s: ε = %v at δ = %v (%s); want the RDP bound of %d Gaussian steps with z = %v, ε = %v at δ = %v", what, c.Epsilon, c.Delta, c.Method, T, budgetZ, want, budgetDelta)
	}
}

// budgetTrainer is DP-SGD on budgetN digits with q = 1 and z = budgetZ: epochs steps.
func budgetTrainer(t *testing.T, train datasets.Dataset, epochs int, onStep func(training.StepProgress) error) *training.Trainer {
	t.Helper()
	return newTrainer(t, newModel(t, models.LogisticRegression(), budgetN), training.TrainerConfig{
		Data:      training.Data{Train: train, Name: "budget-test"},
		Rule:      dpoptim.NewSGD(dpoptim.Constant(0.1)),
		Privacy:   &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: budgetZ, Delta: budgetDelta},
		Schedule:  training.Schedule{BatchSize: budgetN, Epochs: epochs},
		Seed:      seedPtr(1),
		Callbacks: training.Callbacks{OnStep: onStep},
	})
}

// stoppedTrainer is budgetTrainer with a context that its k-th step cancels.
func stoppedTrainer(t *testing.T, train datasets.Dataset, epochs, k int) (*training.Trainer, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return budgetTrainer(t, train, epochs, func(p training.StepProgress) error {
		if p.GlobalStep == k {
			cancel()
		}
		return nil
	}), ctx
}

func openStore(t *testing.T) *budget.Store {
	t.Helper()
	s, err := budget.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stepsOf returns the steps of a segment spend, checking that each is (q = 1, z = budgetZ).
func stepsOf(t *testing.T, what string, sp budget.Spend) int {
	t.Helper()
	n := 0
	for _, g := range sp.Segments {
		if g.Q != 1 || g.Z != budgetZ {
			t.Errorf("%s: segment %+v, want q = 1, z = %v", what, g, budgetZ)
		}
		n += g.Steps
	}
	if sp.Accountant != "rdp" {
		t.Errorf("%s: accountant %q, want rdp", what, sp.Accountant)
	}
	return n
}

func runsOf(t *testing.T, s *budget.Store, fp string) (budget.Dataset, []budget.RunRecord) {
	t.Helper()
	d, runs, err := s.Runs(fp, 0)
	if err != nil {
		t.Fatal(err)
	}
	return d, runs
}

// TestBudgetReserveCommit: the reservation records the whole plan before the first step
// (the data set's spend with it is the closed form's for all its steps), Commit the steps
// taken, and a second run on the same data composes with the first.
func TestBudgetReserveCommit(t *testing.T) {
	train, _ := embedded(t, budgetN)
	fp := datasets.ContentFingerprint(train)
	store := openStore(t)
	const epochs = 4
	tr := budgetTrainer(t, train, epochs, nil)
	rec, err := training.ReserveBudget(store, tr, training.BudgetRun{Name: "digits"})
	if err != nil {
		t.Fatal(err)
	}
	res := rec.Reservation()
	if res.Fingerprint != fp || res.Before.Method != "none" || res.Before.Epsilon != 0 {
		t.Errorf("reservation of %s, before %+v; want data set %s with nothing spent", res.Fingerprint, res.Before, fp)
	}
	checkSteps(t, "with the plan", res.After, epochs)
	if _, runs := runsOf(t, store, fp); len(runs) != 1 || runs[0].Settled || stepsOf(t, "reserved", runs[0].Reserved) != epochs ||
		runs[0].Tool != "training" || runs[0].Name != "digits" || runs[0].Lineage != tr.RunID() || runs[0].Parent != nil {
		t.Fatalf("runs before the first step: %+v; want one unsettled reservation of %d steps of lineage %s", runs, epochs, tr.RunID())
	}
	// The trainer's checkpoints record the ledger's head after the reservation.
	c, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if h := res.Head(); c.BudgetHead == nil || c.BudgetHead.Hash != h.Hash || c.BudgetHead.Seq != 0 || h.Seq != 0 {
		t.Errorf("checkpoint's budget head %+v, reservation's %+v; want entry 0", c.BudgetHead, h)
	}
	run(t, tr)
	total, err := rec.Commit()
	if err != nil {
		t.Fatal(err)
	}
	checkSteps(t, "settled", total, epochs)
	if got, ok := rec.Settled(); !ok || got != total {
		t.Errorf("Settled() = %+v, %v; want %+v", got, ok, total)
	}
	if _, err := rec.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}
	if c, err := tr.Checkpoint(); err != nil || c.BudgetHead == nil || c.BudgetHead.Seq != 1 {
		t.Errorf("checkpoint after the commit: head %+v (%v); want entry 1, the commit", c.BudgetHead, err)
	}

	// A second run on the same data: the data set's spend is both runs' steps.
	tr2 := budgetTrainer(t, train, 3, nil)
	_, total2, err := training.RunBudgeted(context.Background(), store, tr2, training.BudgetRun{Fingerprint: fp})
	if err != nil {
		t.Fatal(err)
	}
	checkSteps(t, "two runs", total2, epochs+3)
	d, runs := runsOf(t, store, fp)
	if d.Runs != 2 || d.Unsettled != 0 || d.Steps != epochs+3 || len(runs) != 2 || stepsOf(t, "second run", runs[1].Spend) != 3 {
		t.Errorf("data set %+v, runs %+v; want 2 settled runs of %d and 3 steps", d, runs, epochs)
	}
}

// TestBudgetStoppedRuns: a run cancelled or failed after k of T steps commits k steps; a
// run never committed (a crash) stays counted at its whole plan.
func TestBudgetStoppedRuns(t *testing.T) {
	train, _ := embedded(t, budgetN)
	fp := datasets.ContentFingerprint(train)
	const T, k = 6, 2
	errStop := errors.New("stop")
	for _, tc := range []struct {
		name string
		stop func(cancel func()) error
		want error
	}{
		{"cancelled", func(cancel func()) error { cancel(); return nil }, context.Canceled},
		{"failed", func(func()) error { return errStop }, errStop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tr := budgetTrainer(t, train, T, func(p training.StepProgress) error {
				if p.GlobalStep == k {
					return tc.stop(cancel)
				}
				return nil
			})
			res, total, err := training.RunBudgeted(ctx, store, tr, training.BudgetRun{})
			if !errors.Is(err, tc.want) || res.Steps != k || tr.Ledger().Steps() != k {
				t.Fatalf("err = %v after %d steps (ledger %d); want %v after %d", err, res.Steps, tr.Ledger().Steps(), tc.want, k)
			}
			checkSteps(t, "settled", total, k)
			if _, runs := runsOf(t, store, fp); len(runs) != 1 || !runs[0].Settled || stepsOf(t, "commit", runs[0].Spend) != k || stepsOf(t, "reserved", runs[0].Reserved) != T {
				t.Errorf("runs %+v; want one run reserved at %d steps, settled at %d", runs, T, k)
			}
		})
	}
	t.Run("not committed", func(t *testing.T) {
		store := openStore(t)
		tr := budgetTrainer(t, train, T, nil)
		if _, err := training.ReserveBudget(store, tr, training.BudgetRun{}); err != nil {
			t.Fatal(err)
		}
		run(t, tr) // and the process dies
		d, runs := runsOf(t, store, fp)
		if d.Unsettled != 1 || len(runs) != 1 || runs[0].Settled || stepsOf(t, "reserved", runs[0].Spend) != T {
			t.Errorf("data set %+v, runs %+v; want one unsettled run counted at its %d planned steps", d, runs, T)
		}
		checkBound(t, "data set", d.Composition, T)
		if _, err := training.ReserveBudget(store, tr, training.BudgetRun{}); err == nil {
			t.Error("a second reservation while one is open succeeded")
		}
	})
}

// TestBudgetLimit: a plan that would take the data set past the limit is refused before
// the first step and records nothing; one within it is recorded.
func TestBudgetLimit(t *testing.T) {
	train, _ := embedded(t, budgetN)
	fp := datasets.ContentFingerprint(train)
	store := openStore(t)
	const T = 5
	// Below the exact ε every bound refuses; at the RDP bound both accept.
	exact := gaussianRDPEpsilon(T, budgetZ, budgetDelta)
	for gaussianDelta(T, budgetZ, exact) <= budgetDelta {
		exact *= 0.999
	}
	tr := budgetTrainer(t, train, T, nil)
	_, _, err := training.RunBudgeted(context.Background(), store, tr, training.BudgetRun{Limit: exact})
	var ob *budget.OverBudgetError
	if !errors.As(err, &ob) || tr.Steps() != 0 {
		t.Fatalf("err = %v after %d steps; want an *OverBudgetError before the first step", err, tr.Steps())
	}
	checkBound(t, "refused plan", ob.After, T)
	if fps, err := store.Fingerprints(); err != nil || len(fps) != 0 {
		t.Errorf("store holds %v (%v) after a refused plan; want nothing", fps, err)
	}
	if _, total, err := training.RunBudgeted(context.Background(), store, tr, training.BudgetRun{Limit: gaussianRDPEpsilon(T, budgetZ, budgetDelta)}); err != nil {
		t.Fatal(err)
	} else {
		checkSteps(t, "within the limit", total, T)
	}
	if d, _ := runsOf(t, store, fp); d.Runs != 1 {
		t.Errorf("%d runs, want 1", d.Runs)
	}
}

// TestBudgetResume: a resumed trainer reserves its remaining steps only, with the
// checkpoint's lineage as its parent; a store that has not seen the lineage imports the
// checkpoint's steps first, and the checkpoint's ledger head is a witness. Steps that a
// trainer took before its first reservation are imported the same way.
func TestBudgetResume(t *testing.T) {
	train, _ := embedded(t, budgetN)
	fp := datasets.ContentFingerprint(train)
	const T, k = 5, 2
	first := openStore(t)
	tr, ctx := stoppedTrainer(t, train, T, k)
	if _, _, err := training.RunBudgeted(ctx, first, tr, training.BudgetRun{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	ck, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if ck.BudgetHead == nil || ck.BudgetHead.Seq != 1 {
		t.Fatalf("checkpoint's budget head %+v; want the commit, entry 1", ck.BudgetHead)
	}

	// resume runs the rest of the plan from ck with its spend recorded in store.
	resume := func(t *testing.T, store *budget.Store) []budget.RunRecord {
		tr2 := budgetTrainer(t, train, T, nil)
		if err := tr2.Restore(ck); err != nil {
			t.Fatal(err)
		}
		_, total, err := training.RunBudgeted(context.Background(), store, tr2, training.BudgetRun{})
		if err != nil {
			t.Fatal(err)
		}
		checkSteps(t, "lineage", total, T)
		_, runs := runsOf(t, store, fp)
		return runs
	}
	t.Run("same store", func(t *testing.T) {
		runs := resume(t, first)
		if len(runs) != 2 || runs[1].Import || stepsOf(t, "resume", runs[1].Spend) != T-k ||
			runs[1].Parent == nil || *runs[1].Parent != (budget.Parent{Run: tr.RunID(), Step: k, Steps: k}) || runs[1].Lineage != tr.RunID() {
			t.Errorf("runs %+v; want the resume's %d steps, parent %s at step %d, no import", runs, T-k, tr.RunID(), k)
		}
	})
	t.Run("other store", func(t *testing.T) {
		runs := resume(t, openStore(t))
		if len(runs) != 2 || !runs[0].Import || stepsOf(t, "import", runs[0].Spend) != k || runs[0].Lineage != tr.RunID() ||
			runs[1].Import || stepsOf(t, "resume", runs[1].Spend) != T-k {
			t.Errorf("runs %+v; want an import of the checkpoint's %d steps, then the resume's %d", runs, k, T-k)
		}
	})
	t.Run("rolled back", func(t *testing.T) {
		// The same data set's ledger in a store restored from before the commit: it holds
		// the reservation (entry 0) but not the commit the checkpoint recorded.
		cut := openStore(t)
		tr0 := budgetTrainer(t, train, T, nil)
		if _, err := training.ReserveBudget(cut, tr0, training.BudgetRun{}); err != nil {
			t.Fatal(err)
		}
		forged := *ck
		head := *ck.BudgetHead
		d, _ := runsOf(t, cut, fp)
		head.Ledger, head.Seq, head.Hash = d.Head.Ledger, 3, d.Head.Hash
		forged.BudgetHead = &head
		tr2 := budgetTrainer(t, train, T, nil)
		if err := tr2.Restore(&forged); err != nil {
			t.Fatal(err)
		}
		if _, err := training.ReserveBudget(cut, tr2, training.BudgetRun{}); !errors.Is(err, budget.ErrRollback) {
			t.Errorf("err = %v, want budget.ErrRollback", err)
		}
	})
	t.Run("steps before the reservation", func(t *testing.T) {
		store := openStore(t)
		tr, ctx := stoppedTrainer(t, train, T, k)
		if _, err := tr.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		_, total, err := training.RunBudgeted(context.Background(), store, tr, training.BudgetRun{})
		if err != nil {
			t.Fatal(err)
		}
		checkSteps(t, "lineage", total, T)
		_, runs := runsOf(t, store, fp)
		if len(runs) != 2 || !runs[0].Import || stepsOf(t, "import", runs[0].Spend) != k || stepsOf(t, "run", runs[1].Spend) != T-k {
			t.Errorf("runs %+v; want an import of the %d unrecorded steps, then the run's %d", runs, k, T-k)
		}
	})
}

// TestBudgetNonPrivate: a non-private run is recorded as unbounded.
func TestBudgetNonPrivate(t *testing.T) {
	train, _ := embedded(t, budgetN)
	tr := newTrainer(t, newModel(t, models.LogisticRegression(), budgetN), training.TrainerConfig{
		Data:     training.Data{Train: train},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.1)),
		Schedule: training.Schedule{BatchSize: budgetN, Epochs: 1},
	})
	_, total, err := training.RunBudgeted(context.Background(), openStore(t), tr, training.BudgetRun{})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(total.Epsilon, 1) || total.Method != "unbounded" {
		t.Errorf("non-private run settled at %+v, want ε = +Inf (unbounded)", total)
	}
}

// TestBudgetExampleNumbers: ExampleRunBudgeted's ε are the closed form's for 3 and 6
// Gaussian steps with z = 4 (q = 1).
func TestBudgetExampleNumbers(t *testing.T) {
	for _, c := range []struct {
		T    int
		want string
	}{{3, "1.847"}, {6, "2.714"}} {
		if got := fmt.Sprintf("%.3f", gaussianRDPEpsilon(c.T, 4, 1e-5)); got != c.want {
			t.Errorf("%d steps: closed form ε = %s, the example prints %s", c.T, got, c.want)
		}
	}
}
