package training_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/datatest"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// embedded returns a stratified subset of n embedded training digits and the 2,000 test
// digits.
var embedded = datatest.MNIST

func seedPtr(s uint64) *uint64 { return &s }

func newModel(t testing.TB, spec nn.Spec, batch int, opts ...nn.Option) *nn.Model {
	t.Helper()
	m, err := nn.New(spec, batch, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newTrainer(t testing.TB, m *nn.Model, cfg training.TrainerConfig) *training.Trainer {
	t.Helper()
	tr, err := training.NewTrainer(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func run(t testing.TB, tr *training.Trainer) training.Result {
	t.Helper()
	res, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestTrainerLearns trains logistic regression on 2,000 embedded digits and checks the
// test accuracy on the 2,000 held-out digits against what softmax regression reaches
// on MNIST (about 92 % on the full set; chance is 10 %), and that the reported ε is the
// accountant's value for the plan, computed independently in a fresh ledger.
func TestTrainerLearns(t *testing.T) {
	train, test := embedded(t, 2000)
	t.Run("non-private", func(t *testing.T) {
		tr := newTrainer(t, newModel(t, models.LogisticRegression(), 100, nn.WithSeed(1)), training.TrainerConfig{
			Data:     training.Data{Train: train, Test: test, Name: "mnist-2000"},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
			Schedule: training.Schedule{BatchSize: 50, Epochs: 4},
			Seed:     seedPtr(1),
		})
		res := run(t, tr)
		if res.TestAccuracy < 0.80 {
			t.Errorf("test accuracy %.3f, want > 0.80", res.TestAccuracy)
		}
		if !math.IsInf(res.Spent.Epsilon, 1) || tr.Plan().Private || tr.Ledger() != nil || tr.Noise() != "none" {
			t.Errorf("non-private run reports ε = %v, private %v, noise %q", res.Spent.Epsilon, tr.Plan().Private, tr.Noise())
		}
		if res.Steps != 4*40 || res.Epochs != 4 {
			t.Errorf("%d steps in %d epochs, want 160 in 4 (⌈2000/50⌉ = 40 per epoch)", res.Steps, res.Epochs)
		}
	})
	t.Run("dp-sgd", func(t *testing.T) {
		const target, delta = 4.0, 1e-5
		tr := newTrainer(t, newModel(t, models.LogisticRegression(), 128, nn.WithSeed(1)), training.TrainerConfig{
			Data:     training.Data{Train: train, Test: test, Name: "mnist-2000"},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(2)),
			Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: target, Delta: delta},
			Schedule: training.Schedule{BatchSize: 200, Epochs: 5},
			Seed:     seedPtr(2),
		})
		plan := tr.Plan()
		res := run(t, tr)
		if res.TestAccuracy < 0.60 {
			t.Errorf("test accuracy %.3f, want > 0.60", res.TestAccuracy)
		}
		q, steps := 200.0/2000, 5*10
		if plan.SampleRate != q || plan.Steps != steps || res.Steps != steps {
			t.Fatalf("plan q = %v, %d steps, ran %d; want q = %v, %d steps", plan.SampleRate, plan.Steps, res.Steps, q, steps)
		}
		fresh := accountant.NewLedger()
		if err := fresh.Record(q, plan.NoiseMultiplier, steps); err != nil {
			t.Fatal(err)
		}
		want, err := fresh.Epsilon(delta)
		if err != nil {
			t.Fatal(err)
		}
		// One Record of T steps multiplies the per-step RDP by T; the run adds it T times.
		if d := math.Abs(res.Spent.Epsilon - want.Epsilon); d > 1e-12*want.Epsilon || res.Spent.Order != want.Order {
			t.Errorf("reported ε = %v (order %v), fresh ledger for the plan %v (order %v)", res.Spent.Epsilon, res.Spent.Order, want.Epsilon, want.Order)
		}
		if res.Spent.Epsilon != plan.Spent.Epsilon {
			t.Errorf("spent ε = %v, plan announced %v before training", res.Spent.Epsilon, plan.Spent.Epsilon)
		}
		if res.Spent.Epsilon > target {
			t.Errorf("spent ε = %v above the target %v", res.Spent.Epsilon, target)
		}
		// The calibrated z is the smallest that meets the target (accountant tolerance 1e-4).
		looser := accountant.NewLedger()
		if err := looser.Record(q, plan.NoiseMultiplier*(1-1e-3), steps); err != nil {
			t.Fatal(err)
		}
		if s, _ := looser.Epsilon(delta); s.Epsilon <= target {
			t.Errorf("z·(1−1e-3) = %v still meets ε = %v: calibration not tight", plan.NoiseMultiplier*(1-1e-3), target)
		}
	})
}

// TestFixedNoisePlan checks the ε a plan with a given noise multiplier reports against a
// fresh ledger, and that a target below it refuses the plan.
func TestFixedNoisePlan(t *testing.T) {
	train, _ := embedded(t, 1000)
	m := newModel(t, models.LogisticRegression(), 64)
	cfg := training.TrainerConfig{
		Data:     training.Data{Train: train},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(1)),
		Schedule: training.Schedule{BatchSize: 100, Epochs: 3},
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1.1, Delta: 1e-5},
	}
	tr := newTrainer(t, m, cfg)
	l := accountant.NewLedger()
	if err := l.Record(0.1, 1.1, 30); err != nil {
		t.Fatal(err)
	}
	want, _ := l.Epsilon(1e-5)
	if got := tr.Plan().Spent; math.Abs(got.Epsilon-want.Epsilon) > 1e-12*want.Epsilon || tr.Plan().Calibrated {
		t.Errorf("plan ε = %v (calibrated %v), fresh ledger %v", got.Epsilon, tr.Plan().Calibrated, want.Epsilon)
	}
	cfg.Privacy.TargetEpsilon = want.Epsilon * 0.99
	if _, err := training.NewTrainer(m, cfg); !errors.Is(err, training.ErrBudget) {
		t.Errorf("plan spending ε = %v under target %v: err = %v, want ErrBudget", want.Epsilon, cfg.Privacy.TargetEpsilon, err)
	}
	cfg.Privacy.TargetEpsilon = want.Epsilon * 1.01
	if _, err := training.NewTrainer(m, cfg); err != nil {
		t.Errorf("plan within its target: %v", err)
	}
}

// TestADPSchedule checks that an ADP-SGD rule's growing noise multipliers z·α_t are
// calibrated as a whole schedule and recorded step by step exactly as planned.
func TestADPSchedule(t *testing.T) {
	train, _ := embedded(t, 500)
	rule := &dpoptim.ADPPolynomial{Eta: 1, A: 19, C: 1}
	tr := newTrainer(t, newModel(t, models.LogisticRegression(), 64, nn.WithSeed(1)), training.TrainerConfig{
		Data:     training.Data{Train: train},
		Rule:     rule,
		Schedule: training.Schedule{BatchSize: 50, Epochs: 2},
		Seed:     seedPtr(1),
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 2, Delta: 1e-5},
	})
	plan := tr.Plan()
	res := run(t, tr)
	if res.Spent.Epsilon != plan.Spent.Epsilon || res.Spent.Epsilon > 2 {
		t.Errorf("spent ε = %v, plan %v, target 2", res.Spent.Epsilon, plan.Spent.Epsilon)
	}
	hist := tr.Ledger().History()
	if len(hist) != plan.Steps {
		t.Fatalf("%d ledger segments, want one per step (%d): the multiplier grows every step", len(hist), plan.Steps)
	}
	for i, s := range hist {
		// α_t = (A + C·(t+1))^{1/4} with A = 19, C = 1 (Remark 4.1 of the ADP-SGD paper).
		want := plan.NoiseMultiplier * math.Pow(19+float64(i+1), 0.25)
		if math.Abs(s.Z-want) > 1e-12*want || s.Q != plan.SampleRate {
			t.Fatalf("step %d recorded (q, z) = (%v, %v), want (%v, %v)", i, s.Q, s.Z, plan.SampleRate, want)
		}
	}
}

// TestChunksAddUpBeforeNoise trains the same seeded run with a physical batch of 7 rows
// (logical batches of about 40 in 6–7 chunks) and of 128 (one chunk): the clipped sums of
// the chunks must add up before the one noise draw per step, so the two runs agree to
// rounding. Noise per chunk would make them differ by the noise itself.
func TestChunksAddUpBeforeNoise(t *testing.T) {
	train, _ := embedded(t, 400)
	params := func(physical int) ([]float64, *training.Trainer) {
		m := newModel(t, models.LogisticRegression(), physical, nn.WithSeed(3), nn.WithDType(nn.Float64))
		tr := newTrainer(t, m, training.TrainerConfig{
			Data:     training.Data{Train: train},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(1)),
			Schedule: training.Schedule{BatchSize: 40, Epochs: 2},
			Seed:     seedPtr(9),
			Privacy:  &training.Privacy{Clip: clipping.Flat{C: 0.5}, NoiseMultiplier: 2, Delta: 1e-5},
		})
		run(t, tr)
		p := make([]float64, m.NumParams())
		m.Params(p)
		return p, tr
	}
	small, trSmall := params(7)
	large, trLarge := params(128)
	var diff, norm float64
	for i := range small {
		diff = math.Max(diff, math.Abs(small[i]-large[i]))
		norm = math.Max(norm, math.Abs(large[i]))
	}
	if diff > 1e-9*norm {
		t.Errorf("physical batch 7 vs 128: parameters differ by %g (max |θ| = %g)", diff, norm)
	}
	if trSmall.Ledger().Steps() != trLarge.Ledger().Steps() || trSmall.Ledger().Steps() != trSmall.Plan().Steps {
		t.Errorf("ledger steps %d and %d, plan %d: one record per logical step", trSmall.Ledger().Steps(), trLarge.Ledger().Steps(), trSmall.Plan().Steps)
	}
}

// TestEmptyPoissonBatches: with q = 1/50 about 36 % of the steps sample nobody; each still
// adds noise and is recorded, as the accountant's Poisson analysis assumes.
func TestEmptyPoissonBatches(t *testing.T) {
	train, _ := embedded(t, 50)
	m := newModel(t, models.LogisticRegression(), 4, nn.WithSeed(1))
	empty, changed := 0, 0
	before := make([]float64, m.NumParams())
	after := make([]float64, m.NumParams())
	var tr *training.Trainer
	tr = newTrainer(t, m, training.TrainerConfig{
		Data:     training.Data{Train: train},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.1)),
		Schedule: training.Schedule{BatchSize: 1, Epochs: 2},
		Seed:     seedPtr(4),
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 5, Delta: 1e-5},
		Callbacks: training.Callbacks{OnStep: func(p training.StepProgress) error {
			if p.BatchSize == 0 {
				empty++
				m.Params(after)
				if !slices.Equal(before, after) {
					changed++
				}
			}
			m.Params(before)
			return nil
		}},
	})
	m.Params(before)
	run(t, tr)
	if empty < 10 {
		t.Fatalf("%d empty batches in 100 steps at q = 0.02, expected about 36", empty)
	}
	if changed != empty {
		t.Errorf("%d of %d empty steps changed the parameters; each must add noise", changed, empty)
	}
	if tr.Ledger().Steps() != 100 {
		t.Errorf("ledger has %d steps, want all 100", tr.Ledger().Steps())
	}
}

// TestRunCancel: a cancelled context stops Run after the step in progress.
func TestRunCancel(t *testing.T) {
	train, _ := embedded(t, 300)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := newTrainer(t, newModel(t, models.LogisticRegression(), 32), training.TrainerConfig{
		Data:     training.Data{Train: train},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.1)),
		Schedule: training.Schedule{BatchSize: 30, Epochs: 3},
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 1, Delta: 1e-5},
		Callbacks: training.Callbacks{OnStep: func(p training.StepProgress) error {
			if p.GlobalStep == 5 {
				cancel()
			}
			return nil
		}},
	})
	res, err := tr.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res.Steps != 5 || tr.Steps() != 5 || tr.Ledger().Steps() != 5 {
		t.Errorf("stopped at step %d (trainer %d, ledger %d), want 5", res.Steps, tr.Steps(), tr.Ledger().Steps())
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tr.Steps() != 30 {
		t.Errorf("continued to step %d, want 30", tr.Steps())
	}
}

// TestCallbacksPLD: with the PLD accountant, whose every ε composes the whole history,
// the steps inside an epoch repeat the ε of the last epoch end, and each epoch end reports
// the PLD ε of the ledger's history at that step (computed here independently).
func TestCallbacksPLD(t *testing.T) {
	train, test := embedded(t, 200)
	var got []float64
	pld := accountant.PLD{}
	var tr *training.Trainer
	tr = newTrainer(t, newModel(t, models.LogisticRegression(), 64), training.TrainerConfig{
		Data:     training.Data{Train: train, Test: test},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(1)),
		Schedule: training.Schedule{BatchSize: 64, Epochs: 2},
		Privacy: &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 2, Delta: 1e-5,
			Accountant: []accountant.Option{accountant.WithAccountant(pld)}},
		Callbacks: training.Callbacks{OnStep: func(p training.StepProgress) error {
			got = append(got, p.Epsilon)
			if p.Step == p.StepsPerEpoch {
				want, err := pld.Epsilon(tr.Ledger().History(), 1e-5)
				if err != nil || p.Epsilon != want.Epsilon {
					t.Errorf("epoch end %d: ε = %v, PLD of the history %v (%v)", p.GlobalStep, p.Epsilon, want.Epsilon, err)
				}
			}
			return nil
		}},
	})
	run(t, tr)
	want := []float64{0, 0, 0, got[3], got[3], got[3], got[3], got[7]}
	if !slices.Equal(got, want) || !(0 < got[3] && got[3] < got[7] && got[7] <= 2) {
		t.Errorf("per-step ε %v, want %v (rising to at most 2)", got, want)
	}
}

// TestCallbacks checks what the callbacks see: every step once, every epoch once with a
// test evaluation, ε rising to the plan's.
func TestCallbacks(t *testing.T) {
	train, test := embedded(t, 200)
	var steps, epochs []int
	var lastEps float64
	tr := newTrainer(t, newModel(t, models.LogisticRegression(), 64), training.TrainerConfig{
		Data:     training.Data{Train: train, Test: test},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(1)),
		Schedule: training.Schedule{BatchSize: 64, Epochs: 2},
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 2, Delta: 1e-5},
		Callbacks: training.Callbacks{OnStep: func(p training.StepProgress) error {
			if p.StepsPerEpoch != 4 || p.TotalSteps != 8 || p.Epsilon <= lastEps {
				t.Errorf("step %+v after ε = %v", p, lastEps)
			}
			lastEps = p.Epsilon
			steps = append(steps, p.GlobalStep)
			return nil
		}, OnEpoch: func(m training.EpochMetrics) error {
			if math.IsNaN(m.TestAccuracy) || m.TestAccuracy < 0 || m.TestAccuracy > 1 || m.Epsilon != lastEps {
				t.Errorf("epoch %+v, last step's ε %v", m, lastEps)
			}
			epochs = append(epochs, m.Epoch)
			return nil
		}},
	})
	run(t, tr)
	if !slices.Equal(steps, []int{1, 2, 3, 4, 5, 6, 7, 8}) || !slices.Equal(epochs, []int{1, 2}) {
		t.Errorf("steps %v, epochs %v", steps, epochs)
	}
	if lastEps != tr.Plan().Spent.Epsilon {
		t.Errorf("final ε %v, plan %v", lastEps, tr.Plan().Spent.Epsilon)
	}
	stop := errors.New("stop")
	tr2 := newTrainer(t, newModel(t, models.LogisticRegression(), 64), training.TrainerConfig{
		Data:      training.Data{Train: train},
		Rule:      dpoptim.NewSGD(dpoptim.Constant(1)),
		Schedule:  training.Schedule{BatchSize: 64, Epochs: 2},
		Callbacks: training.Callbacks{OnEpoch: func(training.EpochMetrics) error { return stop }},
	})
	if _, err := tr2.Run(context.Background()); !errors.Is(err, stop) || tr2.Steps() != 4 {
		t.Errorf("callback error: Run returned %v at step %d, want it at step 4", err, tr2.Steps())
	}
}

func TestNewTrainerErrors(t *testing.T) {
	train, test := embedded(t, 100)
	logreg := newModel(t, models.LogisticRegression(), 16)
	cifarShaped, err := datasets.NewImages([]int{3, 32, 32}, 10, make([]byte, 3*32*32*4), []byte{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	sgd := dpoptim.NewSGD(dpoptim.Constant(1))
	ok := func() training.TrainerConfig {
		return training.TrainerConfig{
			Data:     training.Data{Train: train, Test: test},
			Rule:     sgd,
			Schedule: training.Schedule{BatchSize: 10, Epochs: 1},
			Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 1, Delta: 1e-5},
		}
	}
	if _, err := training.NewTrainer(logreg, ok()); err != nil {
		t.Fatalf("valid configuration: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*training.TrainerConfig)
	}{
		{"no training set", func(c *training.TrainerConfig) { c.Data.Train = nil }},
		{"training shape", func(c *training.TrainerConfig) { c.Data.Train = cifarShaped }},
		{"test shape", func(c *training.TrainerConfig) { c.Data.Test = cifarShaped }},
		{"nil rule", func(c *training.TrainerConfig) { c.Rule = nil }},
		{"batch 0", func(c *training.TrainerConfig) { c.Schedule.BatchSize = 0 }},
		{"batch > n", func(c *training.TrainerConfig) { c.Schedule.BatchSize = 101 }},
		{"no epochs", func(c *training.TrainerConfig) { c.Schedule.Epochs = 0 }},
		{"sampling", func(c *training.TrainerConfig) { c.Schedule.Sampling = 7 }},
		{"no clipping", func(c *training.TrainerConfig) { c.Privacy.Clip = nil }},
		{"per-layer count", func(c *training.TrainerConfig) { c.Privacy.Clip = clipping.PerLayer{C: []float64{1, 1}} }},
		{"clip 0", func(c *training.TrainerConfig) { c.Privacy.Clip = clipping.Flat{C: 0} }},
		{"δ = 0", func(c *training.TrainerConfig) { c.Privacy.Delta = 0 }},
		{"δ = 1", func(c *training.TrainerConfig) { c.Privacy.Delta = 1 }},
		{"δ NaN", func(c *training.TrainerConfig) { c.Privacy.Delta = math.NaN() }},
		{"no noise, no target", func(c *training.TrainerConfig) { c.Privacy.TargetEpsilon = 0 }},
		{"negative z", func(c *training.TrainerConfig) { c.Privacy.NoiseMultiplier = -1 }},
		{"infinite ε", func(c *training.TrainerConfig) { c.Privacy.TargetEpsilon = math.Inf(1) }},
	} {
		cfg := ok()
		tc.change(&cfg)
		if _, err := training.NewTrainer(logreg, cfg); !errors.Is(err, training.ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", tc.name, err)
		}
	}
	if _, err := training.NewTrainer(nil, ok()); !errors.Is(err, training.ErrConfig) {
		t.Errorf("nil model: err = %v", err)
	}
}

// TestShuffleWarns: fixed shuffled batches carry a warning that ε assumes Poisson
// sampling, and every step trains on exactly the batch size (the last one of the epoch on
// the rest).
func TestShuffleWarns(t *testing.T) {
	train, _ := embedded(t, 250)
	var sizes []int
	tr := newTrainer(t, newModel(t, models.LogisticRegression(), 32), training.TrainerConfig{
		Data:      training.Data{Train: train},
		Rule:      dpoptim.NewSGD(dpoptim.Constant(1)),
		Schedule:  training.Schedule{BatchSize: 100, Epochs: 1, Sampling: training.Shuffle},
		Privacy:   &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 1, Delta: 1e-5},
		Callbacks: training.Callbacks{OnStep: func(p training.StepProgress) error { sizes = append(sizes, p.BatchSize); return nil }},
	})
	if w := tr.Plan().Warnings(); len(w) != 1 || !strings.Contains(w[0], "Poisson") {
		t.Errorf("warnings %q, want one about Poisson sampling", w)
	}
	run(t, tr)
	if !slices.Equal(sizes, []int{100, 100, 50}) {
		t.Errorf("batch sizes %v, want [100 100 50]", sizes)
	}
}

// TestClipRuleCopied: the clipping thresholds are fixed when the plan is made. A caller
// who later changes the slice of a clipping.PerLayer it passed must not change how a
// running trainer clips: the noise was scaled to the bound at NewTrainer, so a larger
// threshold would leave sensitivity above what the noise and the ledger assume. The run
// whose caller raised its thresholds must equal a twin run whose caller did not.
func TestClipRuleCopied(t *testing.T) {
	train, _ := embedded(t, 200)
	params := func(mutate bool) []float64 {
		m := newModel(t, models.LogisticRegression(), 32, nn.WithSeed(5), nn.WithDType(nn.Float64))
		thresholds := []float64{0.05}
		tr := newTrainer(t, m, training.TrainerConfig{
			Data:     training.Data{Train: train},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(1)),
			Schedule: training.Schedule{BatchSize: 50, Epochs: 1},
			Seed:     seedPtr(6),
			Privacy:  &training.Privacy{Clip: clipping.PerLayer{C: thresholds}, NoiseMultiplier: 1, Delta: 1e-5},
		})
		if mutate {
			thresholds[0] = 1e6
		}
		run(t, tr)
		p := make([]float64, m.NumParams())
		m.Params(p)
		return p
	}
	if want, got := params(false), params(true); !slices.Equal(got, want) {
		t.Error("changing the caller's per-layer thresholds after NewTrainer changed the training run")
	}
}

// failingRule is SGD that fails at its third step, as a rule does whose parameters
// overflow.
type failingRule struct {
	dpoptim.Rule
	calls int
}

func (r *failingRule) Step(params, grad []float64) error {
	r.calls++
	if r.calls == 3 {
		return errors.New("parameters overflowed")
	}
	return r.Rule.Step(params, grad)
}

// TestFailedStepEndsTrainer checks that a step failing after the private step recorded it
// ends the trainer: running on would spend a step the plan did not count, and a checkpoint
// would hold a ledger one step ahead of the parameters.
func TestFailedStepEndsTrainer(t *testing.T) {
	train, _ := embedded(t, 500)
	m := newModel(t, models.LogisticRegression(), 64)
	tr := newTrainer(t, m, training.TrainerConfig{
		Data:     training.Data{Train: train},
		Rule:     &failingRule{Rule: dpoptim.NewSGD(dpoptim.Constant(1))},
		Schedule: training.Schedule{BatchSize: 100, Epochs: 2},
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1.1, Delta: 1e-5},
		Seed:     seedPtr(1),
	})
	if _, err := tr.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "overflowed") {
		t.Fatalf("Run with a failing rule: err = %v", err)
	}
	if got := tr.Ledger().Steps(); got != 3 {
		t.Fatalf("ledger holds %d steps, want 3 (the failed step was recorded before the rule ran)", got)
	}
	if _, err := tr.Run(context.Background()); err == nil {
		t.Errorf("Run after a failed step succeeded")
	}
	if got := tr.Ledger().Steps(); got != 3 {
		t.Errorf("ledger holds %d steps after the refused Run, want 3", got)
	}
	if _, err := tr.Checkpoint(); err == nil {
		t.Errorf("Checkpoint after a failed step succeeded")
	}
}
