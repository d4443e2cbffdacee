package traincmd

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// TestDivergenceMessage: a learning rate at float32's limit makes the loss +Inf within
// a few steps; with -checkpoint-every 1 the run used to fail writing the checkpoint
// ("nn.position: json: unsupported value: +Inf"). It now stops at the step, says the
// training diverged and what to try, keeps the last good checkpoint (the step before)
// and reports the ε of the step that no ledger records.
func TestDivergenceMessage(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "run.ckpt")
	code, _, stderr := runCmd(t, context.Background(), "-model", "mlp", "-lr", "3e38", "-batch", "256", "-epochs", "1",
		"-seed", "1", "-checkpoint", ckpt, "-checkpoint-every", "1")
	if code != exit.Failure || strings.Contains(stderr, "json") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("training diverged at step %d of 32: the training loss is +Inf", c.Step+1),
		fmt.Sprintf("%s keeps step %d", ckpt, c.Step), "a lower -lr (now 3e+38)", "a smaller -clip (now 1)",
		fmt.Sprintf("privacy: step %d ran and spent privacy that no ledger records", c.Step+1),
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestDivergenceOverflow: parameters that overflow float32 at the first step stop the
// run with the same advice.
func TestDivergenceOverflow(t *testing.T) {
	code, _, stderr := runCmd(t, context.Background(), "-model", "logreg", "-lr", "1e200", "-batch", "256", "-epochs", "1", "-seed", "1")
	if code != exit.Failure || !strings.Contains(stderr, "training diverged at step 1 of 32: training: step 1: nn: invalid parameters") ||
		!strings.Contains(stderr, "nothing was written); try a lower -lr (now 1e+200)") ||
		!strings.Contains(stderr, "privacy: step 1 ran and spent privacy that no ledger records: ε 0 → ") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestCheckpointNonFiniteStatistic: a checkpoint whose running epoch loss is not finite
// is written (the loss as null) and read back with the loss unknown (NaN).
func TestCheckpointNonFiniteStatistic(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "run.ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stepHook = func(p training.StepProgress) {
		if p.GlobalStep == 3 {
			cancel()
		}
	}
	code, _, stderr := runCmd(t, ctx, "-model", "logreg", "-epochs", "2", "-batch", "1000", "-seed", "3", "-checkpoint", ckpt)
	stepHook = nil
	if code != exit.Interrupted {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{math.Inf(1), math.NaN()} {
		c.EpochLoss = v
		if err := checkpoint.Save(ckpt, c); err != nil {
			t.Fatalf("epoch loss %v: %v", v, err)
		}
		d, err := checkpoint.Load(ckpt)
		if err != nil || !math.IsNaN(d.EpochLoss) || d.Step != 3 {
			t.Fatalf("epoch loss %v read back: %v, %v", v, d, err)
		}
	}
}

// TestCheckpointWriteFailure: when a checkpoint write fails (here the file's name was
// taken by a directory), the run stops with the write's error and reports the steps
// since the last checkpoint written and the ε they spent, read against the ledgers
// of two reference runs interrupted at those steps.
func TestCheckpointWriteFailure(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-model", "logreg", "-epochs", "2", "-batch", "1000", "-seed", "3", "-checkpoint-every", "1", "-checkpoint"}
	epsAt := func(step int) float64 {
		t.Helper()
		ck := filepath.Join(dir, fmt.Sprintf("ref%d.ckpt", step))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stepHook = func(p training.StepProgress) {
			if p.GlobalStep == step {
				cancel()
			}
		}
		code, _, stderr := runCmd(t, ctx, append(args, ck)...)
		stepHook = nil
		if code != exit.Interrupted {
			t.Fatalf("reference run to step %d: exit %d: %s", step, code, stderr)
		}
		c, err := checkpoint.Load(ck)
		if err != nil || c.Step != step {
			t.Fatalf("reference checkpoint: %v, %v", c, err)
		}
		spent, err := c.Ledger.Epsilon(c.Plan.Delta)
		if err != nil {
			t.Fatal(err)
		}
		return spent.Epsilon
	}
	eps3, eps4 := epsAt(3), epsAt(4)

	ckpt := filepath.Join(dir, "run.ckpt")
	stepHook = func(p training.StepProgress) {
		if p.GlobalStep == 4 { // after step 3's checkpoint, before step 4's: take its name
			os.Remove(ckpt)
			os.MkdirAll(filepath.Join(ckpt, "blocker"), 0o700)
		}
	}
	code, _, stderr := runCmd(t, context.Background(), append(args, ckpt)...)
	stepHook = nil
	if code != exit.Failure || !strings.Contains(stderr, "-checkpoint "+ckpt) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	want := fmt.Sprintf("privacy: step 4 ran and spent privacy that no ledger records: ε %.4g → %.4g at δ = 1e-05 (the last checkpoint written, %s, records step 3); count ε = %.4g against",
		eps3, eps4, ckpt, eps4)
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}
