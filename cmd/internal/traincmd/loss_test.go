package traincmd

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// TestLossFlagErrors: a -loss that is not cross-entropy or focal:GAMMA with a finite
// GAMMA ≥ 0 is a usage error (exit 2) in one line naming the flag, before any data is read.
func TestLossFlagErrors(t *testing.T) {
	for _, v := range []string{"focal:", "focal:-1", "focal:NaN", "focal:Inf", "focal:x", "focal", "mse", "cross_entropy", ""} {
		code, stdout, stderr := runCmd(t, context.Background(), "-model", "logreg", "-epochs", "1", "-loss", v)
		if code != exit.Usage || stdout != "" || !strings.Contains(stderr, "-loss") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("-loss %q: exit %d, stdout %q, stderr %q", v, code, stdout, stderr)
		}
	}
	for _, v := range []string{"cross-entropy", "focal:0", "focal:2", "focal:0.5"} {
		if o := parseOptions(t, "-loss", v); o.validateLoss() != nil {
			t.Errorf("-loss %q refused", v)
		}
	}
}

// TestFocalResume: a focal run interrupted after step 5 records the loss in its
// checkpoint (settings and model part), and resuming it with -resume alone takes -loss
// from the checkpoint and ends bit for bit where the uninterrupted focal run does;
// resuming it with another loss is refused. A cross-entropy run records no loss setting
// (its checkpoints are what they were before -loss), and the focal run differs from it.
func TestFocalResume(t *testing.T) {
	dir := t.TempDir()
	ckpt, full, plain := filepath.Join(dir, "run.ckpt"), filepath.Join(dir, "full.ckpt"), filepath.Join(dir, "ce.ckpt")
	args := []string{"-model", "logreg", "-noise", "1.1", "-epochs", "2", "-batch", "1000", "-seed", "3", "-loss", "focal:2", "-checkpoint"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stepHook = func(p training.StepProgress) {
		if p.GlobalStep == 5 {
			cancel()
		}
	}
	code, _, stderr := runCmd(t, ctx, append(args, ckpt)...)
	stepHook = nil
	if code != exit.Interrupted {
		t.Fatalf("interrupted run: exit %d, %s", code, stderr)
	}
	mid, err := checkpoint.Load(ckpt)
	if err != nil || mid.Step != 5 {
		t.Fatalf("checkpoint after interrupt: %v", err)
	}
	if mid.Settings["loss"] != "focal:2" || mid.Loss != "focal:2" {
		t.Fatalf("checkpoint records loss setting %q, model loss %q; want focal:2", mid.Settings["loss"], mid.Loss)
	}
	for _, other := range []string{"cross-entropy", "focal:3"} {
		code, _, stderr := runCmd(t, context.Background(), "-resume", ckpt, "-loss", other)
		if code != exit.Usage || !strings.Contains(stderr, "loss") {
			t.Errorf("resumed with -loss %s: exit %d, %q", other, code, stderr)
		}
	}
	code, stdout, stderr := runCmd(t, context.Background(), "-resume", ckpt, "-checkpoint", ckpt)
	if code != exit.OK || !strings.Contains(stderr, "loss: focal loss (γ = 2)") || !strings.Contains(stderr, "settings from the checkpoint") ||
		!strings.Contains(stderr, "loss,") || !strings.Contains(stdout, "loss            focal loss (γ = 2)") {
		t.Errorf("resumed run (exit %d) does not report the focal loss taken from the checkpoint:\n%s\n%s", code, stderr, stdout)
	}
	s := decodeSummary(t, mustRun(t, append(args, full, "-json")...))
	if s["loss_function"] != "focal:2" {
		t.Errorf("summary loss_function %v, want focal:2", s["loss_function"])
	}
	sameCheckpointParams(t, "parameter", ckpt, full)

	s = decodeSummary(t, mustRun(t, "-model", "logreg", "-noise", "1.1", "-epochs", "2", "-batch", "1000", "-seed", "3", "-checkpoint", plain, "-json"))
	if _, ok := s["loss_function"]; ok {
		t.Errorf("a cross-entropy run's summary has loss_function %v", s["loss_function"])
	}
	ce, err := checkpoint.Load(plain)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := ce.Settings["loss"]; ok || ce.Loss != "" {
		t.Errorf("a cross-entropy run records loss setting %q, model loss %q", v, ce.Loss)
	}
	fc, err := checkpoint.Load(full)
	if err != nil {
		t.Fatal(err)
	}
	if firstDiffIndex(fc.Params, ce.Params) < 0 {
		t.Error("the focal run's parameters are the cross-entropy run's")
	}
}

func firstDiffIndex(a, b []float64) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestTuneLoss: -tune searches over -loss like any other flag: the released trial's
// checkpoint records the loss it drew (the one value given), and its model rebuilds
// with it.
func TestTuneLoss(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "best.ckpt")
	args := append(slices.Clone(tinySearch), "-batch", "512", "-noise", "2", "-checkpoint", ckpt,
		"-tune", "lr=1,2;loss=focal:2;trials=geometric:mean=2")
	if code, _, stderr := runCmd(t, context.Background(), args...); code != exit.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if c.Settings["loss"] != "focal:2" || c.Loss != "focal:2" {
		t.Errorf("best trial's checkpoint: loss setting %q, model loss %q; want focal:2", c.Settings["loss"], c.Loss)
	}
}
