package traincmd

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// -lr-schedule cosine[:ALPHA] with -warmup-steps: the rates of the schedule that a plan of
// 100 steps runs, against the closed forms (warm-up lr·t/W, then
// αlr + (lr − αlr)(1 + cos(π(t−W)/(100−W)))/2).
func TestCosineWithWarmup(t *testing.T) {
	o := parseOptions(t, "-lr", "2", "-lr-schedule", "cosine:0.1", "-warmup-steps", "10", "-model", "logreg")
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	s, err := scheduleFor(o, 100)
	if err != nil {
		t.Fatal(err)
	}
	cosine := func(t int) float64 {
		return 0.2 + (2-0.2)*(1+math.Cos(math.Pi*float64(t-10)/90))/2
	}
	for _, c := range []struct {
		t    int
		want float64
	}{{0, 0}, {1, 0.2}, {5, 1}, {9, 1.8}, {10, 2}, {40, cosine(40)}, {55, 1.1}, {99, cosine(99)}, {100, 0.2}, {150, 0.2}} {
		if got := s.Rate(c.t); math.Abs(got-c.want) > 1e-14 {
			t.Errorf("rate(%d) = %v, want %v", c.t, got, c.want)
		}
	}
	if o.decaySteps != 90 {
		t.Errorf("decay steps %d, want 90", o.decaySteps)
	}
	set := o.settings()
	if set["warmup-steps"] != "10" || set["lr-decay-steps"] != "90" || set["lr-schedule"] != "cosine:0.1" {
		t.Errorf("settings %v", set)
	}
	if _, ok := set["ema"]; ok {
		t.Errorf("settings record -ema without averaging: %v", set)
	}

	// cosine alone: to zero over the whole plan; no warm-up recorded.
	o = parseOptions(t, "-lr", "3", "-lr-schedule", "cosine", "-model", "logreg")
	s, _ = scheduleFor(o, 40)
	if c, ok := s.(dpoptim.Cosine); !ok || c != (dpoptim.Cosine{Initial: 3, Steps: 40}) {
		t.Errorf("cosine schedule %#v", s)
	}
	if got := s.Rate(20); math.Abs(got-1.5) > 1e-15 {
		t.Errorf("cosine rate at half the plan %v, want 1.5", got)
	}
	if set := o.settings(); set["warmup-steps"] != "" || set["lr-decay-steps"] != "40" {
		t.Errorf("settings %v", set)
	}
	// A warm-up hands over to any schedule, whose steps then count from its end.
	o = parseOptions(t, "-lr", "1", "-lr-schedule", "step:5:0.5", "-warmup-steps", "4", "-model", "logreg")
	s, _ = scheduleFor(o, 40)
	for k, want := range map[int]float64{2: 0.5, 4: 1, 8: 1, 9: 0.5} {
		if got := s.Rate(k); got != want {
			t.Errorf("warm-up + step decay: rate(%d) = %v, want %v", k, got, want)
		}
	}
	if _, err := scheduleFor(o, 4); err == nil || !strings.Contains(err.Error(), "-warmup-steps") {
		t.Errorf("a warm-up as long as the plan: %v", err)
	}
}

func TestScheduleAndEMAFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-lr-schedule", "cosine:2"}, "-lr-schedule"},
		{[]string{"-lr-schedule", "cosine:-0.1"}, "-lr-schedule"},
		{[]string{"-lr-schedule", "cosine:x"}, "-lr-schedule"},
		{[]string{"-lr-schedule", "cosine:0.1:5"}, "-lr-schedule"},
		{[]string{"-warmup-steps", "-1"}, "-warmup-steps"},
		{[]string{"-optimizer", "adp-sgd", "-warmup-steps", "5"}, "-warmup-steps"},
		{[]string{"-model", "logreg", "-batch", "4000", "-epochs", "2", "-warmup-steps", "4"}, "-warmup-steps"},
		{[]string{"-ema", "1"}, "-ema"},
		{[]string{"-ema", "-0.5"}, "-ema"},
		{[]string{"-ema", "NaN"}, "-ema"},
		{[]string{"-ema", "x"}, "-ema"},
	} {
		code, stdout, stderr := runCmd(t, context.Background(), tc.args...)
		if code != exit.Usage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("train %s: exit %d, stderr %q; want exit 2 and one line naming %s", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// A run with -ema, -warmup-steps and a cosine schedule reports them (summary, metrics),
// saves the average, and resumes to the uninterrupted result; a resume with another -ema
// or -epochs is refused.
func TestEMAAndScheduleRun(t *testing.T) {
	dir := t.TempDir()
	a, metrics := filepath.Join(dir, "a.ckpt"), filepath.Join(dir, "m.jsonl")
	common := []string{"-model", "logreg", "-seed", "7", "-noise", "1.1", "-batch", "500", "-json",
		"-ema", "0.9", "-warmup-steps", "5", "-lr-schedule", "cosine:0.1"}
	whole := decodeSummary(t, mustRun(t, append(common, "-epochs", "3", "-checkpoint", a, "-metrics", metrics)...))
	if whole["ema"] != 0.9 || whole["warmup_steps"] != 5.0 || whole["lr_schedule"] != "cosine:0.1" {
		t.Errorf("summary: ema %v, warmup_steps %v, lr_schedule %v", whole["ema"], whole["warmup_steps"], whole["lr_schedule"])
	}
	// 16 steps an epoch, 48 in all: the warm-up's 5, then cosine over 43 from lr 3 to 0.3.
	f, err := os.Open(metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		last := 16*line - 1
		want := 0.3 + 2.7*(1+math.Cos(math.Pi*float64(last-5)/43))/2
		if got, _ := r["learning_rate"].(float64); math.Abs(got-want) > 1e-12 || r["ema"] != 0.9 {
			t.Errorf("metrics line %d: learning_rate %v (want %v), ema %v", line, r["learning_rate"], want, r["ema"])
		}
	}
	ca, err := checkpoint.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	if ca.EMA != 0.9 || ca.EMASteps != 48 || ca.Settings["ema"] != "0.9" || ca.Settings["warmup-steps"] != "5" {
		t.Fatalf("checkpoint: EMA %v over %d steps, settings %v", ca.EMA, ca.EMASteps, ca.Settings)
	}

	// The same run interrupted after step 20 (mid-epoch) and resumed.
	mid := filepath.Join(dir, "mid.ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	stepHook = func(p training.StepProgress) {
		if p.GlobalStep == 20 {
			cancel()
		}
	}
	code, _, stderr := runCmd(t, ctx, append(common, "-epochs", "3", "-checkpoint", mid)...)
	stepHook = nil
	if code != exit.Interrupted {
		t.Fatalf("interrupted run: exit %d, %s", code, stderr)
	}
	resumed := decodeSummary(t, mustRun(t, "-resume", mid, "-checkpoint", mid, "-json"))
	if whole["test_accuracy"] != resumed["test_accuracy"] || whole["test_loss"] != resumed["test_loss"] || resumed["ema"] != 0.9 {
		t.Errorf("uninterrupted %v\nresumed %v", whole, resumed)
	}
	cm, err := checkpoint.Load(mid)
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, "average", cm.EMAParams, ca.EMAParams)
	for _, args := range [][]string{{"-ema", "0.99"}, {"-ema", "0"}, {"-epochs", "4"}, {"-warmup-steps", "6"}} {
		code, _, stderr := runCmd(t, context.Background(), append([]string{"-resume", a}, args...)...)
		if code != exit.Usage || strings.Count(stderr, "\n") != 1 || !strings.Contains(strings.ToLower(stderr), strings.TrimPrefix(args[0], "-")) {
			t.Errorf("resume %v: exit %d, %q", args, code, stderr)
		}
	}
}

// FuzzParseSchedule: any -lr-schedule and -warmup-steps either give a usage error or a
// schedule whose rates over the plan are finite and ≥ 0 (what the rules accept).
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"constant", "step:10:0.1", "inverse-time", "inverse-sqrt", "inverse-sqrt:20:1",
		"cosine", "cosine:0.1", "cosine:1", "cosine:", "cosine:0.1:2", "cosine:NaN", "step:1e9:0", ":", ""} {
		f.Add(s, 0.5, 0, 100)
		f.Add(s, 3.0, 10, 50)
	}
	f.Fuzz(func(t *testing.T, spec string, lr float64, warmup, steps int) {
		if !(lr > 0) || math.IsInf(lr, 0) || steps < 1 || steps > 1e6 || warmup < 0 {
			return // validate rejects these before
		}
		o := &options{lrSchedule: spec, lr: lr, warmupSteps: warmup, optimizer: "dp-sgd"}
		if _, err := parseSchedule(spec, lr); err != nil {
			return
		}
		s, err := scheduleFor(o, steps)
		if err != nil {
			if warmup < steps {
				t.Fatalf("%q, warm-up %d of %d steps: %v", spec, warmup, steps, err)
			}
			return
		}
		rule := dpoptim.NewSGD(s)
		p := []float64{0}
		for k := 0; k < min(steps, 50); k++ {
			if err := rule.Step(p, []float64{1}); err != nil {
				if strings.HasPrefix(spec, "step:") {
					return // step:AT:0 is parsed and then refused by the rule (StepDecay's documented zero value)
				}
				t.Fatalf("%q, warm-up %d of %d steps: step %d: %v", spec, warmup, steps, k, err)
			}
		}
	})
}
