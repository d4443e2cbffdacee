package training_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// rewindTrainer is a seeded DP-SGD run of 10 steps per epoch at a fixed z (no target, so
// that only the rewind rules, not the budget, decide), or calibrated for target when > 0.
func rewindTrainer(t *testing.T, epochs int, target float64, onEpoch func(training.EpochMetrics) error) *training.Trainer {
	train, _ := embedded(t, 400)
	priv := &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1.2, Delta: 1e-5}
	if target > 0 {
		priv.NoiseMultiplier, priv.TargetEpsilon = 0, target
	}
	return newTrainer(t, newModel(t, models.LogisticRegression(), 32, nn.WithSeed(1)), training.TrainerConfig{
		Data:      training.Data{Train: train, Name: "mnist-400"},
		Rule:      dpoptim.NewSGD(dpoptim.Constant(1)),
		Privacy:   priv,
		Schedule:  training.Schedule{BatchSize: 40, Epochs: epochs},
		Seed:      seedPtr(9),
		Callbacks: training.Callbacks{OnEpoch: onEpoch},
	})
}

// TestRestoreRefusesRewind is the rewind: a trainer that ran 4 epochs (40 steps)
// restores its own epoch-2 checkpoint. Without AllowRewind it must refuse (it used to
// shrink the ledger to 20 steps); with it, the ledger keeps all 40 and ε never decreases.
func TestRestoreRefusesRewind(t *testing.T) {
	var ck2 *checkpoint.Training
	var tr *training.Trainer
	tr = rewindTrainer(t, 4, 0, func(m training.EpochMetrics) error {
		if m.Epoch == 2 {
			var err error
			ck2, err = tr.Checkpoint()
			return err
		}
		return nil
	})
	run(t, tr)
	spent4, _ := tr.Spent()
	ck4, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if ck2.RunID != tr.RunID() || ck4.RunID != tr.RunID() || len(tr.RunID()) != 32 {
		t.Fatalf("run ids %q, %q, trainer %q", ck2.RunID, ck4.RunID, tr.RunID())
	}
	if ck2.Step != 20 || ck4.Step != 40 {
		t.Fatalf("checkpoints at steps %d and %d", ck2.Step, ck4.Step)
	}

	err = tr.Restore(ck2)
	if !errors.Is(err, training.ErrRewind) {
		t.Fatalf("rewind without AllowRewind: err = %v, want ErrRewind", err)
	}
	if tr.Steps() != 40 || tr.Ledger().Steps() != 40 {
		t.Fatalf("refused rewind changed the trainer: step %d, ledger %d", tr.Steps(), tr.Ledger().Steps())
	}

	if err := tr.Restore(ck2, training.AllowRewind()); err != nil {
		t.Fatalf("rewind with AllowRewind: %v", err)
	}
	if tr.Steps() != 20 || tr.Ledger().Steps() != 40 {
		t.Fatalf("after the rewind: step %d, ledger %d steps; want step 20 and the ledger's 40", tr.Steps(), tr.Ledger().Steps())
	}
	if s, _ := tr.Spent(); s.Epsilon < spent4.Epsilon {
		t.Fatalf("ε decreased from %v to %v by a rewind", spent4.Epsilon, s.Epsilon)
	}
	// Plan: 40 more steps of the same (q, z) to finish; the ledger composes 40 + 20.
	res := run(t, tr)
	if res.Steps != 40 || tr.Ledger().Steps() != 60 {
		t.Fatalf("finished at step %d with a ledger of %d steps, want 40 and 60", res.Steps, tr.Ledger().Steps())
	}
	if res.Spent.Epsilon <= spent4.Epsilon || res.Spent.Epsilon != tr.Plan().Spent.Epsilon {
		t.Errorf("ε after the rewound run %v, before %v, planned %v", res.Spent.Epsilon, spent4.Epsilon, tr.Plan().Spent.Epsilon)
	}
	// The rewound lineage survives Save and Load, and resumes in a fresh trainer.
	ck, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ck.Rewinds, []checkpoint.Rewind{{From: 40, To: 20}}) || ck.LineageSteps() != 60 {
		t.Fatalf("rewinds %v, lineage %d steps", ck.Rewinds, ck.LineageSteps())
	}
	path := filepath.Join(t.TempDir(), "r.ckpt")
	if err := checkpoint.Save(path, ck); err != nil {
		t.Fatal(err)
	}
	loaded, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fresh := rewindTrainer(t, 4, 0, nil)
	if err := fresh.Restore(loaded); err != nil {
		t.Fatal(err)
	}
	if fresh.RunID() != ck.RunID || fresh.Ledger().Steps() != 60 {
		t.Errorf("fresh trainer: run %q (want %q), ledger %d steps", fresh.RunID(), ck.RunID, fresh.Ledger().Steps())
	}
	// That trainer has now taken steps of the run: the old epoch-4 state of the discarded
	// branch is an earlier state too.
	if err := fresh.Restore(ck4); !errors.Is(err, training.ErrRewind) {
		t.Errorf("restoring the discarded branch: err = %v, want ErrRewind", err)
	}
}

// TestRestoreForwardAndForeign: moving forward within the run needs no option; a
// checkpoint of another run is refused once the trainer has taken steps, with or without
// AllowRewind; a calibrated plan cannot finish within its target after a rewind.
func TestRestoreForwardAndForeign(t *testing.T) {
	var ck1 *checkpoint.Training
	var tr *training.Trainer
	tr = rewindTrainer(t, 2, 0, func(m training.EpochMetrics) error {
		if m.Epoch == 1 {
			var err error
			ck1, err = tr.Checkpoint()
			return err
		}
		return nil
	})
	run(t, tr)
	ck2, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	// A fresh trainer restores epoch 1, runs nothing, then moves on to epoch 2.
	a := rewindTrainer(t, 2, 0, nil)
	if err := a.Restore(ck1); err != nil {
		t.Fatal(err)
	}
	if err := a.Restore(ck2); err != nil {
		t.Fatalf("forward restore: %v", err)
	}
	if a.Steps() != 20 || a.Ledger().Steps() != 20 {
		t.Errorf("forward restore: step %d, ledger %d", a.Steps(), a.Ledger().Steps())
	}
	// Another run (its own id) that has taken steps refuses this run's checkpoints.
	other := rewindTrainer(t, 2, 0, nil)
	run(t, other)
	for _, opts := range [][]training.RestoreOption{nil, {training.AllowRewind()}} {
		if err := other.Restore(ck1, opts...); !errors.Is(err, training.ErrRewind) {
			t.Errorf("another run's checkpoint (options %d): err = %v, want ErrRewind", len(opts), err)
		}
	}
	// Calibrated for ε = 2 over 20 steps: the 10 discarded steps leave no room to finish.
	var cal1 *checkpoint.Training
	var cal *training.Trainer
	cal = rewindTrainer(t, 2, 2, func(m training.EpochMetrics) error {
		if m.Epoch == 1 {
			var err error
			cal1, err = cal.Checkpoint()
			return err
		}
		return nil
	})
	run(t, cal)
	if err := cal.Restore(cal1, training.AllowRewind()); !errors.Is(err, training.ErrBudget) {
		t.Errorf("rewinding a calibrated run: err = %v, want ErrBudget", err)
	}
	if cal.Steps() != 20 || cal.Ledger().Steps() != 20 {
		t.Errorf("refused rewind changed the trainer: step %d, ledger %d", cal.Steps(), cal.Ledger().Steps())
	}
}

// TestRewindADPSchedule: after a rewind, an ADP-SGD ledger holds the schedule's
// multipliers of both branches (steps 0–7, then 4–11); Load and Restore verify them.
func TestRewindADPSchedule(t *testing.T) {
	tr := adpTrainer(t, 3)
	// The epoch-1 checkpoint comes from a one-epoch run that tr then continues.
	first := adpTrainer(t, 1)
	run(t, first)
	ck1, err := first.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Restore(ck1); err != nil {
		t.Fatal(err)
	}
	run(t, tr) // steps 4–11
	if err := tr.Restore(ck1, training.AllowRewind()); err != nil {
		t.Fatal(err)
	}
	run(t, tr) // steps 4–11 again
	ck, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	var zs []float64
	for _, s := range ck.Ledger.History() {
		for range s.Steps {
			zs = append(zs, s.Z)
		}
	}
	var want []float64
	for _, r := range [][2]int{{0, 12}, {4, 12}} {
		for step := r[0]; step < r[1]; step++ {
			want = append(want, 0.9*sqrt4(19+float64(step+1)))
		}
	}
	if !slices.Equal(zs, want) {
		t.Fatalf("ledger multipliers %v, want %v", zs, want)
	}
	path := filepath.Join(t.TempDir(), "adp.ckpt")
	if err := checkpoint.Save(path, ck); err != nil {
		t.Fatal(err)
	}
	loaded, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := adpTrainer(t, 3).Restore(loaded); err != nil {
		t.Fatalf("rewound ADP checkpoint: %v", err)
	}
}
