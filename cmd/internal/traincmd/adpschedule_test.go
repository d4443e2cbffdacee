package traincmd

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// -adp-schedule is refused, naming the flag, for the other optimizers and for unknown
// schedules; -adp-beta and -adp-c only go with adagrad-norm.
func TestADPScheduleFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-optimizer", "dp-sgd", "-adp-schedule", "poly"}, []string{"-adp-schedule", "adp-sgd", "not dp-sgd"}},
		{[]string{"-optimizer", "sgd", "-adp-schedule", "sqrt-decay"}, []string{"-adp-schedule", "adp-sgd"}},
		{[]string{"-optimizer", "dp-adam", "-adp-noise", "constant"}, []string{"-adp-noise", "adp-sgd"}},
		{[]string{"-optimizer", "adp-sgd", "-adp-schedule", "cosine"}, []string{"-adp-schedule", "poly, sqrt-decay, adagrad-norm"}},
		{[]string{"-optimizer", "adp-sgd", "-adp-noise", "none"}, []string{"-adp-noise", "matched"}},
		{[]string{"-optimizer", "adp-sgd", "-adp-beta", "2"}, []string{"-adp-beta", "adagrad-norm", "not poly"}},
		{[]string{"-optimizer", "adp-sgd", "-adp-schedule", "sqrt-decay", "-adp-c", "0.1"}, []string{"-adp-c", "adagrad-norm"}},
		{[]string{"-optimizer", "adp-sgd", "-adp-schedule", "adagrad-norm", "-adp-c", "0"}, []string{"-adp-c"}},
		{[]string{"-optimizer", "adp-sgd", "-adp-schedule", "adagrad-norm", "-adp-beta", "-1"}, []string{"-adp-beta"}},
	} {
		code, _, stderr := runCmd(t, context.Background(), append(tc.args, "-model", "logreg")...)
		if code != exit.Usage || strings.Count(stderr, "\n") != 1 {
			t.Errorf("train %s: exit %d, stderr %q; want one line and exit 2", strings.Join(tc.args, " "), code, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("train %s: %q lacks %q", strings.Join(tc.args, " "), stderr, w)
			}
		}
	}
}

// Each schedule end to end on logreg: the ε reported equals an RDP ledger composed here
// from the schedule's closed form z_t = z·α_{t+1} per step (q = b/n), and the report names
// the schedule.
func TestADPScheduleEpsilon(t *testing.T) {
	const z, batch, epochs, delta = 2.0, 1000, 2, 1e-5
	dir := t.TempDir()
	for _, tc := range []struct {
		schedule, noise string
		alpha           func(t, T int) float64 // α_{t+1}, from the paper
		report          string
	}{
		{"poly", "matched", func(t, _ int) float64 { return math.Pow(20+float64(t), 0.25) }, "step size 1/√(20+t)"},
		{"sqrt-decay", "matched", func(t, T int) float64 {
			return 1 / math.Sqrt(0.1-(0.1-1e-10)/math.Sqrt(float64(T))*math.Sqrt(float64(t)))
		}, "0.1 − α_T√t"},
		{"sqrt-decay", "constant", func(int, int) float64 { return 1 }, "constant noise (DP-SGD)"},
		{"adagrad-norm", "matched", func(t, _ int) float64 { return math.Pow(20+float64(t+1)*0.01, 0.25) }, "AdaGrad-norm"},
	} {
		ckpt := filepath.Join(dir, tc.schedule+tc.noise+".ckpt")
		args := []string{"-model", "logreg", "-optimizer", "adp-sgd", "-lr", "1", "-adp-schedule", tc.schedule, "-adp-noise", tc.noise,
			"-noise", "2", "-batch", "1000", "-epochs", "2", "-seed", "5", "-checkpoint", ckpt}
		if tc.schedule == "adagrad-norm" {
			args = append(args, "-adp-c", "0.01")
		}
		code, _, stderr := runCmd(t, context.Background(), args...)
		if code != exit.OK {
			t.Fatalf("train %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
		if !strings.Contains(stderr, tc.report) {
			t.Errorf("%s/%s: plan lacks %q:\n%s", tc.schedule, tc.noise, tc.report, stderr)
		}
		c, err := checkpoint.Load(ckpt)
		if err != nil {
			t.Fatal(err)
		}
		p := c.Plan
		if p.Steps != epochs*p.StepsPerEpoch || p.NoiseMultiplier != z || p.SampleRate != float64(batch)/float64(p.DatasetSize) {
			t.Fatalf("%s: plan %+v", tc.schedule, p)
		}
		ledger := accountant.NewLedger()
		for step := range p.Steps {
			if err := ledger.Record(p.SampleRate, z*tc.alpha(step, p.Steps), 1); err != nil {
				t.Fatal(err)
			}
		}
		want, err := ledger.Epsilon(delta)
		if err != nil {
			t.Fatal(err)
		}
		s := decodeSummary(t, mustRun(t, "-resume", ckpt, "-json"))
		if got := s["epsilon"].(float64); math.Abs(got/want.Epsilon-1) > 1e-6 {
			t.Errorf("%s/%s: ε = %v, independent ledger %v", tc.schedule, tc.noise, got, want.Epsilon)
		}
	}
}

// A run interrupted after step 5 and resumed ends bit for bit where an uninterrupted run
// does, for each schedule (AdaGrad-norm's b_t travels in the checkpoint); a sqrt-decay run
// keeps its horizon T, so resuming it with other -epochs is refused.
func TestADPScheduleResume(t *testing.T) {
	dir := t.TempDir()
	for _, schedule := range adpSchedules {
		ckpt, full := filepath.Join(dir, schedule+".ckpt"), filepath.Join(dir, schedule+"-full.ckpt")
		args := []string{"-model", "logreg", "-optimizer", "adp-sgd", "-lr", "2", "-adp-schedule", schedule,
			"-noise", "1.5", "-epochs", "2", "-batch", "1000", "-seed", "3", "-checkpoint"}
		ctx, cancel := context.WithCancel(context.Background())
		stepHook = func(p training.StepProgress) {
			if p.GlobalStep == 5 {
				cancel()
			}
		}
		code, _, stderr := runCmd(t, ctx, append(args, ckpt)...)
		stepHook = nil
		cancel()
		if code != exit.Interrupted {
			t.Fatalf("%s: interrupted run: exit %d, %s", schedule, code, stderr)
		}
		mid, err := checkpoint.Load(ckpt)
		if err != nil || mid.Step != 5 {
			t.Fatalf("%s: checkpoint after interrupt: %v", schedule, err)
		}
		if schedule == "adagrad-norm" {
			if b2, ok := mid.OptimizerState.Rule.Scalars["b2"]; !ok || !(b2 > 20) {
				t.Errorf("adagrad-norm: checkpoint's b² = %v (%v), want > b₀² = 20", b2, ok)
			}
		}
		if schedule == "sqrt-decay" {
			code, _, stderr := runCmd(t, context.Background(), "-resume", ckpt, "-epochs", "3")
			if code != exit.Usage || !strings.Contains(stderr, "sqrt-decay") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("sqrt-decay resumed with other -epochs: exit %d, %q", code, stderr)
			}
		}
		mustRun(t, "-resume", ckpt, "-checkpoint", ckpt)
		mustRun(t, append(args, full)...)
		sameCheckpointParams(t, schedule+": parameter", ckpt, full)
	}
}

// A checkpoint of an ADP-SGD run from before the -adp-* flags (settings without them)
// resumes as the poly schedule with matched noise; asking it for another schedule is refused.
func TestADPLegacyCheckpoint(t *testing.T) {
	legacy := map[string]string{"optimizer": "adp-sgd", "model": "logreg"}
	o := &options{resume: "old.ckpt", set: map[string]bool{}}
	if err := o.applyCheckpointADP(legacy); err != nil || !o.adp.unrecorded {
		t.Fatalf("legacy checkpoint: %v, unrecorded %v", err, o.adp.unrecorded)
	}
	o = parseOptions(t, "-optimizer", "adp-sgd", "-model", "logreg")
	s := o.settings()
	if s["adp-schedule"] != "poly" || s["adp-noise"] != "matched" {
		t.Errorf("new settings %v", s)
	}
	o.adp.unrecorded = true
	for k := range o.settings() {
		if strings.HasPrefix(k, "adp-") {
			t.Errorf("a legacy run records %s", k)
		}
	}
	o = parseOptions(t, "-optimizer", "adp-sgd", "-model", "logreg", "-adp-schedule", "sqrt-decay")
	o.resume = "old.ckpt"
	if err := o.applyCheckpointADP(legacy); err == nil || !strings.Contains(err.Error(), "-adp-schedule") {
		t.Errorf("legacy checkpoint with -adp-schedule sqrt-decay: %v", err)
	}
}
