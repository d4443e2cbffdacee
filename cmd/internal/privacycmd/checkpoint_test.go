package privacycmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// The private run of privateCheckpoint: n examples in expected batches of b for epochs
// epochs at noise multiplier z, δ = delta.
const (
	ckptN, ckptBatch, ckptEpochs = 256, 64, 3
	ckptZ, ckptDelta             = 1.3, 1e-6
)

// privateCheckpoint trains logistic regression privately (DP-SGD, Poisson sampling) on
// ckptN embedded digits and saves the run as dir/name with settings.
func privateCheckpoint(t *testing.T, dir, name string, settings map[string]string) string {
	t.Helper()
	train, _ := clitest.MNIST(t, ckptN)
	m, err := nn.New(models.LogisticRegression(), 64, nn.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(3)
	tr, err := training.NewTrainer(m, training.TrainerConfig{
		Data:     training.Data{Train: train, Name: "mnist-embedded"},
		Settings: settings,
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: ckptZ, Delta: ckptDelta},
		Schedule: training.Schedule{BatchSize: ckptBatch, Epochs: ckptEpochs},
		Seed:     &seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return clitest.Save(t, tr, filepath.Join(dir, name))
}

// TestEpsilonOfCheckpoint: epsilon -checkpoint gives the ε that the accountants give for
// the run's (q, z, steps), known here from how it was trained (q = b/n, steps =
// epochs·⌈n/b⌉, the trainer's default RDP orders and Balle conversion, the plan's δ),
// with the plan, steps and lineage, in JSON and in text; -delta overrides the plan's δ.
func TestEpsilonOfCheckpoint(t *testing.T) {
	dir := t.TempDir()
	ckpt := privateCheckpoint(t, dir, "m.ckpt", nil)
	q, steps := float64(ckptBatch)/ckptN, ckptEpochs*((ckptN+ckptBatch-1)/ckptBatch)
	history := []accountant.Segment{{Q: q, Z: ckptZ, Steps: steps}}
	wantRDP, err := accountant.RDP{}.Epsilon(history, ckptDelta)
	if err != nil {
		t.Fatal(err)
	}
	wantPLD, err := accountant.PLD{}.Epsilon(history, ckptDelta)
	if err != nil {
		t.Fatal(err)
	}

	code, out, stderr := runArgs("epsilon", "-checkpoint", ckpt, "-json")
	if code != exit.OK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var r result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if r.Epsilon != wantRDP.Epsilon || r.Order != wantRDP.Order || r.Delta != ckptDelta || r.Accountant != "rdp" {
		t.Errorf("RDP: ε = %v at order %v, δ = %v (%s); the accountant gives ε = %v at order %v, δ = %v", r.Epsilon, r.Order, r.Delta, r.Accountant, wantRDP.Epsilon, wantRDP.Order, ckptDelta)
	}
	if r.PLD == nil || r.PLD.Epsilon != wantPLD.Epsilon || r.PLD.Accountant != "pld" {
		t.Errorf("PLD: %+v; the accountant gives ε = %v", r.PLD, wantPLD.Epsilon)
	}
	if !(wantPLD.Epsilon < wantRDP.Epsilon) || !(wantRDP.Epsilon > 0) {
		t.Errorf("RDP ε %v, PLD ε %v: want 0 < PLD < RDP", wantRDP.Epsilon, wantPLD.Epsilon)
	}
	if r.SampleRate != q || r.Steps != steps || r.NoiseMultiplier != ckptZ {
		t.Errorf("q = %v, %d steps, z = %v; want %v, %d, %v", r.SampleRate, r.Steps, r.NoiseMultiplier, q, steps, ckptZ)
	}
	c := r.Checkpoint
	if c == nil {
		t.Fatalf("no checkpoint object in %s", out)
	}
	if c.Step != steps || c.Epoch != ckptEpochs || c.LineageSteps != steps || c.LedgerSteps != steps || len(c.Rewinds) != 0 ||
		len(c.Ledger) != 1 || c.Ledger[0] != history[0] || c.Plan.Steps != steps || c.Plan.DatasetSize != ckptN ||
		c.Plan.BatchSize != ckptBatch || c.Plan.NoiseMultiplier != ckptZ || !checkpoint.IsRunID(c.RunID) ||
		c.Model == "" || c.Dataset != "mnist-embedded" || c.Noise != "seeded(3)" {
		t.Errorf("checkpoint object %+v", c)
	}

	// One accountant, another δ.
	r = runJSON(t, "epsilon", "-checkpoint", ckpt, "-accountant", "pld", "-delta", "1e-3")
	want, _ := accountant.PLD{}.Epsilon(history, 1e-3)
	if r.Epsilon != want.Epsilon || r.Delta != 1e-3 || r.PLD != nil || r.Accountant != "pld" {
		t.Errorf("-accountant pld -delta 1e-3: %+v; the accountant gives ε = %v", r, want.Epsilon)
	}

	// Text: the ε of both accountants, then the plan, the run and its lineage.
	code, out, stderr = runArgs("epsilon", "-checkpoint", ckpt)
	if code != exit.OK || stderr != "" {
		t.Fatalf("text: exit %d, stderr %q", code, stderr)
	}
	for _, s := range []string{
		fmt.Sprintf("epsilon           %-22s%.6g\n", fmt.Sprintf("%.6g", wantRDP.Epsilon), wantPLD.Epsilon),
		"delta             1e-06",
		"steps             12\n",
		"plan              poisson sampling q = 0.25 (batch 64 of 256), 3 epochs × 4 steps = 12 steps; noise multiplier 1.3 given, clip flat C=1, δ = 1e-06",
		"step 12 of 12 planned (epoch 3 of 3); its lineage took 12 steps, no rewinds",
		"seeded(3): reproducible, NOT private",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("text output lacks %q:\n%s", s, out)
		}
	}
}

// TestEpsilonOfRewoundCheckpoint: a run that went back to its epoch-1 checkpoint
// (a rewind, training.AllowRewind) and ran to the end again took 12 + 8 steps, and its
// ε is the accountant's for all 20: the discarded steps stay spent. The lineage says so.
func TestEpsilonOfRewoundCheckpoint(t *testing.T) {
	train, _ := clitest.MNIST(t, ckptN)
	m, err := nn.New(models.LogisticRegression(), 64, nn.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(3)
	var tr *training.Trainer
	var first *checkpoint.Training
	tr, err = training.NewTrainer(m, training.TrainerConfig{
		Data:     training.Data{Train: train, Name: "mnist-embedded"},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: ckptZ, Delta: ckptDelta},
		Schedule: training.Schedule{BatchSize: ckptBatch, Epochs: ckptEpochs},
		Seed:     &seed,
		Callbacks: training.Callbacks{OnEpoch: func(training.EpochMetrics) (err error) {
			if first == nil {
				first, err = tr.Checkpoint()
			}
			return err
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tr.Restore(first, training.AllowRewind()); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	path := clitest.Save(t, tr, filepath.Join(t.TempDir(), "rewound.ckpt"))
	const perEpoch = ckptN / ckptBatch
	taken := ckptEpochs*perEpoch + (ckptEpochs-1)*perEpoch // 12, then 8 again from step 4
	want, err := accountant.RDP{}.Epsilon([]accountant.Segment{{Q: float64(ckptBatch) / ckptN, Z: ckptZ, Steps: taken}}, ckptDelta)
	if err != nil {
		t.Fatal(err)
	}
	r := runJSON(t, "epsilon", "-checkpoint", path, "-accountant", "rdp")
	if r.Epsilon != want.Epsilon || r.Steps != taken {
		t.Errorf("ε = %v over %d steps; the accountant gives %v for the %d steps taken", r.Epsilon, r.Steps, want.Epsilon, taken)
	}
	info := r.Checkpoint
	if info == nil || info.Step != ckptEpochs*perEpoch || info.LineageSteps != taken || info.LedgerSteps != taken ||
		len(info.Rewinds) != 1 || info.Rewinds[0] != (checkpoint.Rewind{From: ckptEpochs * perEpoch, To: perEpoch}) {
		t.Errorf("checkpoint object %+v; want step 12, lineage 20, one rewind 12→4", info)
	}
	code, out, _ := runArgs("epsilon", "-checkpoint", path)
	if code != exit.OK || !strings.Contains(out, "its lineage took 20 steps, 1 rewind (12→4), whose discarded steps stay in the ledger") {
		t.Errorf("text: exit %d:\n%s", code, out)
	}
}

// TestEpsilonOfCheckpointRefuses: -checkpoint with plan flags, a non-private run, a
// missing file; a -tune trial's checkpoint gets a warning that the search's ε is larger.
func TestEpsilonOfCheckpointRefuses(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 128)
	plain := clitest.Checkpoint(t, dir, models.LogisticRegression(), train) // non-private
	private := privateCheckpoint(t, dir, "p.ckpt", nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-checkpoint", private, "-noise", "1"}, "-noise and -checkpoint both given"},
		{[]string{"-checkpoint", private, "-n", "10", "-batch", "2"}, "-n and -checkpoint both given"},
		{[]string{"-checkpoint", plain}, "a run without privacy"},
		{[]string{"-checkpoint", filepath.Join(dir, "missing.ckpt")}, "no such file"},
		{[]string{"-checkpoint", private, "-delta", "2"}, "-delta: must be in (0, 1)"},
	} {
		code, _, stderr := runArgs(append([]string{"epsilon"}, tc.args...)...)
		if code != exit.Usage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	trial := privateCheckpoint(t, dir, "trial.ckpt", map[string]string{"tune-trial": "lr=2"})
	code, out, stderr := runArgs("epsilon", "-checkpoint", trial, "-json")
	if code != exit.OK || !strings.Contains(stderr, "best trial (lr=2) of a train -tune search") || !strings.Contains(out, `"tune_trial":"lr=2"`) {
		t.Errorf("tune trial: exit %d, stderr %q, output %s", code, stderr, out)
	}
}

// TestEpsilonOfCheckpointSigning: the checkpoint is loaded under the MAC rules every
// command shares (PRIVTRAIN_CHECKPOINT_KEY, -allow-unsigned).
func TestEpsilonOfCheckpointSigning(t *testing.T) {
	plain := privateCheckpoint(t, t.TempDir(), "m.ckpt", nil)
	clitest.CheckSigning(t, plain, func(ckpt string) []string { return []string{"-checkpoint", ckpt} },
		func(args []string) (int, string) {
			var out, errb bytes.Buffer
			return run(append([]string{"epsilon"}, args...), &out, &errb), errb.String()
		})
}

// TestHelpSaysCheckpointEpsilon: privacy's help and epsilon's say how to get a saved
// run's ε (privtrain help promises it; cmd/privtrain's test runs the command).
func TestHelpSaysCheckpointEpsilon(t *testing.T) {
	_, out, _ := runArgs("-help")
	_, eps, _ := runArgs("epsilon", "-help")
	if !strings.Contains(out, "the run of a checkpoint (-checkpoint FILE") || !strings.Contains(eps, "privacy epsilon -checkpoint FILE [flags]") || !strings.Contains(eps, "-checkpoint FILE\n") {
		t.Errorf("privacy -help:\n%s\nprivacy epsilon -help:\n%s", out, eps)
	}
}
