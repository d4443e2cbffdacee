package training_test

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
	"github.com/privtrain/privtrain/training"
)

// forgedLedger is a self-consistent ledger (totals computed from its history, its own
// checksum valid) of steps steps at (q, z): what anyone can write with the public API.
func forgedLedger(t *testing.T, q, z float64, steps int) string {
	t.Helper()
	l := accountant.NewLedger()
	if err := l.Record(q, z, steps); err != nil {
		t.Fatal(err)
	}
	b, err := l.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rewrite applies edit to the checkpoint at path and writes the result with the public
// writer (so every checksum is recomputed) to a new file.
func rewrite(t *testing.T, path, name string, edit func(f *tensorfile.File)) string {
	t.Helper()
	f, err := tensorfile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(f)
	out := filepath.Join(filepath.Dir(path), name)
	if err := tensorfile.WriteFile(out, f); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestForgedLedgerRefused is the forgery: a real checkpoint whose ledger history
// is rewritten to claim z = 100 (ε near 0), with consistent totals and checksums, must not
// load; nor may a checkpoint whose ledger claims fewer steps than its position.
func TestForgedLedgerRefused(t *testing.T) {
	dir := t.TempDir()
	path, c := savedCheckpoint(t, dir, 1) // 4 steps of DP-Adam at q = 0.25, z calibrated for ε = 2
	if c.Plan.SampleRate != 0.25 || c.Step != 4 {
		t.Fatalf("fixture changed: q = %v, step %d", c.Plan.SampleRate, c.Step)
	}
	honest, err := c.Spent()
	if err != nil {
		t.Fatal(err)
	}
	forged := rewrite(t, path, "forged.ckpt", func(f *tensorfile.File) {
		f.Metadata["nn.ledger"] = forgedLedger(t, 0.25, 100, 4)
	})
	if f, err := tensorfile.ReadFile(forged); err != nil {
		t.Fatalf("the forged file is a sound container: %v", err)
	} else if !strings.Contains(f.Metadata["nn.ledger"], "100") {
		t.Fatal("forgery not written")
	}
	_, err = checkpoint.Load(forged)
	if !errors.Is(err, checkpoint.ErrInvalid) || !strings.Contains(err.Error(), "does not match the run") {
		t.Fatalf("forged ledger (z = 100 instead of %v, honest ε = %.3g): Load err = %v, want ErrCheckpoint naming the mismatch", c.Plan.NoiseMultiplier, honest.Epsilon, err)
	}
	// One segment altered among honest ones: the first step at a slightly larger z.
	l := accountant.NewLedger()
	if err := l.Record(0.25, c.Plan.NoiseMultiplier*1.01, 1); err != nil {
		t.Fatal(err)
	}
	if err := l.Record(0.25, c.Plan.NoiseMultiplier, 3); err != nil {
		t.Fatal(err)
	}
	b, _ := l.MarshalJSON()
	partly := rewrite(t, path, "partly.ckpt", func(f *tensorfile.File) { f.Metadata["nn.ledger"] = string(b) })
	if _, err := checkpoint.Load(partly); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("one step's z raised by 1%%: Load err = %v, want ErrCheckpoint", err)
	}
	// The honest file still loads.
	if _, err := checkpoint.Load(path); err != nil {
		t.Fatalf("honest checkpoint: %v", err)
	}
	// An in-memory checkpoint with a forged ledger is refused by Restore too.
	mem, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	mem.Ledger = accountant.NewLedger()
	if err := mem.Ledger.Record(0.25, 100, 4); err != nil {
		t.Fatal(err)
	}
	train, test := embedded(t, 200)
	tr := newTrainer(t, newModel(t, models.LogisticRegression(), 32, nn.WithSeed(1)), training.TrainerConfig{
		Data:     training.Data{Train: train, Test: test, Name: "mnist-200"},
		Rule:     dpoptim.NewAdam(dpoptim.Constant(1e-2)),
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 2, Delta: 1e-5},
		Schedule: training.Schedule{BatchSize: 50, Epochs: 2},
		Seed:     seedPtr(3),
		Settings: map[string]string{"lr": "0.01"},
	})
	if err := tr.Restore(mem); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("Restore of a forged in-memory ledger: err = %v, want ErrCheckpoint", err)
	}
	if tr.Steps() != 0 || tr.Ledger().Steps() != 0 {
		t.Error("a refused Restore changed the trainer")
	}
}

// adpTrainer is a small ADP-SGD run with a fixed base noise multiplier: step t records
// z·(19 + (t+1))^{1/4}.
func adpTrainer(t *testing.T, epochs int) *training.Trainer {
	train, _ := embedded(t, 200)
	return newTrainer(t, newModel(t, models.LogisticRegression(), 32, nn.WithSeed(1)), training.TrainerConfig{
		Data:     training.Data{Train: train, Name: "mnist-200"},
		Rule:     &dpoptim.ADPPolynomial{Eta: 1, A: 19, C: 1},
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 0.9, Delta: 1e-5},
		Schedule: training.Schedule{BatchSize: 50, Epochs: epochs},
		Seed:     seedPtr(5),
	})
}

// TestForgedScheduleRefused: an ADP-SGD checkpoint records a different z at every step;
// Restore recomputes the schedule and refuses a ledger that departs from it, and a
// checkpoint that drops its noise-schedule flag to pass as constant-noise is refused too.
func TestForgedScheduleRefused(t *testing.T) {
	dir := t.TempDir()
	src := adpTrainer(t, 2)
	run(t, src)
	c, err := src.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Ledger.History(); len(h) != 8 || h[0].Z != 0.9*sqrt4(20) || h[7].Z != 0.9*sqrt4(27) {
		t.Fatalf("ADP ledger %+v, want 8 steps at 0.9·(20..27)^{1/4}", h)
	}
	path := filepath.Join(dir, "adp.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	// The honest checkpoint resumes.
	loaded, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := adpTrainer(t, 3).Restore(loaded); err != nil {
		t.Fatalf("honest ADP checkpoint: %v", err)
	}
	// Every step at the last step's (largest) multiplier: plausible for ADP, but not this plan.
	forged := rewrite(t, path, "forged.ckpt", func(f *tensorfile.File) {
		f.Metadata["nn.ledger"] = forgedLedger(t, 0.25, 0.9*sqrt4(27), 8)
	})
	fc, err := checkpoint.Load(forged)
	if err != nil {
		t.Fatalf("Load cannot know the rule's schedule; it must leave the check to Restore: %v", err)
	}
	if err := adpTrainer(t, 3).Restore(fc); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("forged ADP schedule: Restore err = %v, want ErrCheckpoint", err)
	}
	// Claiming constant noise instead: the ledger (base z at every step) now passes Load's
	// constant-z check, but the ADP trainer sees that the plan is not its own.
	flat := rewrite(t, path, "flat.ckpt", func(f *tensorfile.File) {
		f.Metadata["nn.plan"] = strings.Replace(f.Metadata["nn.plan"], `"noise_schedule":true,`, "", 1)
		f.Metadata["nn.ledger"] = forgedLedger(t, 0.25, 0.9, 8)
	})
	flc, err := checkpoint.Load(flat)
	if err != nil {
		t.Fatal(err)
	}
	if err := adpTrainer(t, 3).Restore(flc); !errors.Is(err, training.ErrMismatch) {
		t.Errorf("ADP checkpoint passed off as constant-noise: Restore err = %v, want ErrMismatch", err)
	}
	// Dropping the flag but keeping the real, varying ledger fails at Load.
	noflag := rewrite(t, path, "noflag.ckpt", func(f *tensorfile.File) {
		f.Metadata["nn.plan"] = strings.Replace(f.Metadata["nn.plan"], `"noise_schedule":true,`, "", 1)
	})
	if _, err := checkpoint.Load(noflag); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("varying z in a constant-noise plan: Load err = %v, want ErrCheckpoint", err)
	}
}

func sqrt4(x float64) float64 { return math.Sqrt(math.Sqrt(x)) }
