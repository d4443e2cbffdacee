package traincmd

import (
	"context"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// TestResumeWithOtherEpsilon: a run calibrated for ε = 3 over 2 epochs, resumed to 3
// epochs with -epsilon 4, keeps the checkpoint's z. The summary must say so: z
// calibrated for ε = 3, budget 4, noise_calibrated false (z was not calibrated for
// target_epsilon 4), and an ε that a fresh ledger computes for (q, z, 3 epochs of steps).
// Resuming that run again without flags still says ε = 3.
func TestResumeWithOtherEpsilon(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.ckpt"), filepath.Join(dir, "b.ckpt")
	first := decodeSummary(t, mustRun(t, "-model", "logreg", "-batch", "500", "-epochs", "2", "-checkpoint", a, "-json"))
	if first["noise_calibrated"] != true || first["noise_calibrated_for"] != 3.0 || first["target_epsilon"] != 3.0 {
		t.Errorf("fresh calibrated run: %v", first)
	}
	code, stdout, stderr := runCmd(t, context.Background(), "-resume", a, "-epsilon", "4", "-epochs", "3", "-checkpoint", b, "-json")
	if code != exit.OK {
		t.Fatalf("resume -epsilon 4: exit %d: %s", code, stderr)
	}
	s := decodeSummary(t, stdout)
	z := first["noise_multiplier"].(float64)
	if s["noise_multiplier"] != z || s["noise_calibrated"] != false || s["noise_calibrated_for"] != 3.0 || s["target_epsilon"] != 4.0 || s["noise_from_checkpoint"] != true {
		t.Errorf("resumed with -epsilon 4: %v; want z = %v, noise_calibrated false, noise_calibrated_for 3, target_epsilon 4", s, z)
	}
	l := accountant.NewLedger()
	if err := l.Record(500.0/8000, z, 3*16); err != nil {
		t.Fatal(err)
	}
	want, _ := l.Epsilon(1e-5)
	if eps := s["epsilon"].(float64); math.Abs(eps-want.Epsilon) > 1e-9 || eps <= 3 || eps > 4 {
		t.Errorf("ε = %v, the ledger gives %v (want in (3, 4])", eps, want.Epsilon)
	}
	if strings.Contains(stderr, "calibrated)") || !strings.Contains(stderr, "calibrated for ε = 3 when the run started; this run's budget ε = 4") {
		t.Errorf("plan of the resumed run does not say where z came from:\n%s", stderr)
	}
	text := mustRun(t, "-resume", b)
	if strings.Contains(text, "calibrated for ε = 4") || !strings.Contains(text, "calibrated for ε = 3 when the run started; this run's budget ε = 4") {
		t.Errorf("resuming the resumed run:\n%s", text)
	}
}

// TestOutputPathsCheckedFirst: an unwritable -plot or -checkpoint is refused before the
// first step (exit 2, one line, nothing trained), as -metrics is; no probe file is left.
func TestOutputPathsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such")
	for _, tc := range []struct{ flag, path, want string }{
		{"-plot", filepath.Join(missing, "p.png"), "no such file"},
		{"-checkpoint", filepath.Join(missing, "c.ckpt"), "no such file"},
		{"-metrics", filepath.Join(missing, "m.jsonl"), "no such file"},
		{"-checkpoint", dir, "is a directory"},
		{"-plot", filepath.Join(dir, "x.png", ""), "is a directory"},
	} {
		if tc.path == filepath.Join(dir, "x.png", "") {
			os.Mkdir(filepath.Join(dir, "x.png"), 0o755)
			tc.path = filepath.Join(dir, "x.png")
		}
		code, stdout, stderr := runCmd(t, context.Background(), "-model", "logreg", "-epochs", "1", tc.flag, tc.path)
		if code != exit.Usage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.flag) || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s %s: exit %d, stderr %q", tc.flag, tc.path, code, stderr)
		}
		if strings.Contains(stderr, "epoch") {
			t.Errorf("%s %s: trained before failing: %q", tc.flag, tc.path, stderr)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".train-probe") {
			t.Errorf("probe file %s left behind", e.Name())
		}
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o555)
		code, _, stderr := runCmd(t, context.Background(), "-model", "logreg", "-epochs", "1", "-plot", filepath.Join(ro, "p.png"))
		if code != exit.Usage || !strings.Contains(stderr, "permission denied") {
			t.Errorf("read-only directory: exit %d, %q", code, stderr)
		}
	}
}

// TestInterruptSaysEpoch: stopped at step 3 of a 2-epoch, 8-steps-per-epoch run the
// message says "in epoch 1 of 2" (it said "epoch 0 of 2"); at step 8, "after epoch 1 of
// 2"; the resumed run says where it starts the same way, and lists the settings taken
// from the checkpoint in sorted order.
func TestInterruptSaysEpoch(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "run.ckpt")
	for _, tc := range []struct {
		at   int
		want string
	}{{3, "after step 3 of 16 (in epoch 1 of 2)"}, {8, "after step 8 of 16 (after epoch 1 of 2)"}} {
		ctx, cancel := context.WithCancel(context.Background())
		stepHook = func(p training.StepProgress) {
			if p.GlobalStep == tc.at {
				cancel()
			}
		}
		code, _, stderr := runCmd(t, ctx, "-model", "logreg", "-epochs", "2", "-batch", "1000", "-seed", "3", "-checkpoint", ckpt, "-overwrite")
		stepHook = nil
		cancel()
		if code != exit.Interrupted || !strings.Contains(stderr, tc.want) {
			t.Errorf("interrupted at step %d: exit %d, stderr %q; want %q", tc.at, code, stderr, tc.want)
		}
	}
	code, _, stderr := runCmd(t, context.Background(), "-resume", ckpt, "-epochs", "2")
	if code != exit.OK || !strings.Contains(stderr, "at step 8 of 16 (after epoch 1 of 2)") {
		t.Errorf("resume: exit %d, %q", code, stderr)
	}
	var list string
	for _, line := range strings.Split(stderr, "\n") {
		if l, ok := strings.CutPrefix(line, "resumed: settings from the checkpoint: "); ok {
			list = l
		}
	}
	names := strings.Split(list, ", ")
	if len(names) < 5 || !slices.IsSorted(names) {
		t.Errorf("settings from the checkpoint %q: want them sorted", list)
	}
}

// TestProgressETA: with a clock that advances 2 s per step, a run of 3 epochs × 4 steps
// resumed at step 2 has, after its 3rd step overall (1 step of this process, 2 s),
// 1 step left in the epoch (2 s) and 9 in the run (18 s); the epoch line after step 4
// (4 s for 2 steps) says 8 steps × 2 s = 16 s remain.
func TestProgressETA(t *testing.T) {
	var out strings.Builder
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &reporter{w: &out, tty: true, now: func() time.Time { return clock }}
	r.markStart(2)
	clock = clock.Add(2 * time.Second)
	r.step(training.StepProgress{Epoch: 1, Step: 3, StepsPerEpoch: 4, GlobalStep: 3, TotalSteps: 12, Loss: 0.5, Epsilon: 1})
	if !strings.Contains(out.String(), "ETA 2s, run 18s") {
		t.Errorf("progress line %q: want epoch ETA 2s and run ETA 18s", out.String())
	}
	clock = clock.Add(2 * time.Second)
	out.Reset()
	r.epoch(training.EpochMetrics{Epoch: 1, Step: 4, TrainLoss: 0.5, TrainAccuracy: 0.9, TestLoss: 0.4, TestAccuracy: 0.9, Epsilon: 1, Seconds: 4},
		training.Plan{Epochs: 3, Steps: 12, StepsPerEpoch: 4})
	if !strings.Contains(out.String(), "run ETA 16s") || !strings.HasPrefix(out.String(), "\r\033[K") {
		t.Errorf("epoch line %q: want it to replace the progress line and say run ETA 16s", out.String())
	}
}

// TestPlotPanels: the plot of a private run has three panels (accuracy, loss, ε) of
// 8 cm each plus 1 cm, 25 cm high; a non-private run's has no ε panel, 17 cm. Both are
// 16 cm wide, so the height/width ratios are 25/16 and 17/16. The title names the run.
func TestPlotPanels(t *testing.T) {
	dir := t.TempDir()
	ratio := func(name string, args ...string) float64 {
		p := filepath.Join(dir, name)
		mustRun(t, append(args, "-model", "logreg", "-epochs", "2", "-batch", "400", "-plot", p)...)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cfg, err := png.DecodeConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		return float64(cfg.Height) / float64(cfg.Width)
	}
	if r := ratio("private.png"); math.Abs(r-25.0/16) > 0.01 {
		t.Errorf("private plot height/width %.4f, want 25/16 (three panels)", r)
	}
	if r := ratio("sgd.png", "-optimizer", "sgd"); math.Abs(r-17.0/16) > 0.01 {
		t.Errorf("non-private plot height/width %.4f, want 17/16 (no ε panel)", r)
	}
}

// TestErrorPrefixesOnce: a damaged checkpoint is reported as "train: -resume PATH: not a
// privtrain checkpoint: …", each part once (it was "-resume PATH: nn: loading
// checkpoint: checkpoint: PATH: …"); checkpoint.Load's own error names the file once too.
func TestErrorPrefixesOnce(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.ckpt")
	if err := os.WriteFile(bad, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, context.Background(), "-resume", bad)
	if code != exit.Failure || !strings.HasPrefix(stderr, "train: -resume "+bad+": not a privtrain checkpoint") || strings.Count(stderr, bad) != 1 || strings.Contains(stderr, "nn:") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	_, err := checkpoint.Load(bad)
	if msg := fmt.Sprint(err); strings.Count(msg, bad) != 1 || !strings.HasPrefix(msg, "checkpoint: "+bad+": not a") || strings.Contains(msg, "loading") {
		t.Errorf("checkpoint.Load: %q", msg)
	}
	// A mismatch keeps its one-line usage status and says what differs, once.
	ck := filepath.Join(t.TempDir(), "a.ckpt")
	mustRun(t, "-model", "logreg", "-epochs", "1", "-batch", "1000", "-checkpoint", ck)
	code, _, stderr = runCmd(t, context.Background(), "-resume", ck, "-model", "cnn")
	if code != exit.Usage || strings.Count(stderr, ck) != 1 || strings.Contains(stderr, "nn:") || !strings.Contains(stderr, "model: checkpoint has logreg") {
		t.Errorf("mismatch: exit %d, %q", code, stderr)
	}
}

// TestNonPrivateDefaults: sgd and adam default to batch 128 and 10 epochs, lr 0.2 and
// 0.003; with them sgd on the MNIST CNN reaches at 5 epochs what the private default
// reaches at 30 (94.5–95 %, README). With the old defaults (batch 2048, lr 0.5) the same
// 5-epoch run with seed 2 ended at 56.8 % (seed 1: 85.8 %).
func TestNonPrivateDefaults(t *testing.T) {
	s := decodeSummary(t, mustRun(t, "-model", "logreg", "-optimizer", "sgd", "-json"))
	if s["batch"] != 128.0 || s["epochs"] != 10.0 || s["learning_rate"] != 0.2 {
		t.Errorf("sgd defaults: batch %v, epochs %v, lr %v; want 128, 10, 0.2", s["batch"], s["epochs"], s["learning_rate"])
	}
	s = decodeSummary(t, mustRun(t, "-model", "logreg", "-optimizer", "adam", "-epochs", "1", "-json"))
	if s["batch"] != 128.0 || s["learning_rate"] != 0.003 {
		t.Errorf("adam defaults: batch %v, lr %v; want 128, 0.003", s["batch"], s["learning_rate"])
	}
	if testing.Short() {
		t.Skip("trains the CNN for 5 epochs")
	}
	s = decodeSummary(t, mustRun(t, "-optimizer", "sgd", "-epochs", "5", "-seed", "2", "-json"))
	if acc := s["test_accuracy"].(float64); acc < 0.95 {
		t.Errorf("sgd, CNN, 5 epochs, seed 2: test accuracy %v, want ≥ 0.95 (the private default's 30-epoch level)", acc)
	}
}
