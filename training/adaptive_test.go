package training_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// One full-batch step (q = 1, two physical chunks) with almost no noise: the clip norm
// after it is C_0·exp(−η(b − γ)), where b is the fraction of the 64 examples whose
// gradient norm at the initial parameters is at most C_0, computed on a second copy of
// the model. A count off by one example would move log C by η/64 ≈ 3e-3.
func TestAdaptiveTrainerCountsUnclippedExamples(t *testing.T) {
	const n, eta, gamma = 64, 0.2, 0.5
	train, _ := embedded(t, n)
	spec := func() nn.Spec { return models.MNISTCNN(models.Tanh) }
	// The norms at the initial parameters, brute force: one example at a time.
	ref := newModel(t, spec(), 1, nn.WithSeed(3))
	grad := make([]float64, ref.NumParams())
	norms := make([]float64, n)
	x := make([]float32, 28*28)
	for i := range n {
		label := train.Example(i, x)
		st, err := ref.ClippedGradient(nn.Batch{X: x, Labels: []int{label}}, clipping.Flat{C: 1}, grad)
		if err != nil {
			t.Fatal(err)
		}
		norms[i] = st.Norms[0]
	}
	// C_0 between the 20th and 21st smallest norms: 20 examples unclipped.
	sorted := slices.Sorted(slices.Values(norms))
	c0 := (sorted[19] + sorted[20]) / 2
	unclipped := 0
	for _, v := range norms {
		if v <= c0 {
			unclipped++
		}
	}
	if unclipped != 20 {
		t.Fatalf("%d examples unclipped at C_0 = %v, want 20 (ties among the norms?)", unclipped, c0)
	}
	tr := newTrainer(t, newModel(t, spec(), 32, nn.WithSeed(3)), training.TrainerConfig{
		Data:     training.Data{Train: train},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.1)),
		Schedule: training.Schedule{BatchSize: n, Epochs: 1, Sampling: training.Shuffle},
		Seed:     seedPtr(1),
		Privacy: &training.Privacy{Clip: clipping.Flat{C: c0}, NoiseMultiplier: 1e-3, Delta: 1e-5,
			Adaptive: &dpoptim.AdaptiveClip{TargetQuantile: gamma, LearningRate: eta, CountNoise: 1e-3}},
	})
	res := run(t, tr)
	if res.Steps != 1 {
		t.Fatalf("%d steps, want 1", res.Steps)
	}
	want := c0 * math.Exp(-eta*(float64(unclipped)/n-gamma))
	if got := tr.ClipNorm(); math.Abs(math.Log(got/want)) > 5e-4 {
		t.Errorf("C after one step = %v, want %v (%d of %d unclipped)", got, want, unclipped, n)
	}
}

// With augmentation multiplicity the count is of examples, not of views: at a C_0 below
// every norm no example is unclipped, so C grows by exp(η·γ). Counting rows (K per
// example) would report n of n unclipped and shrink C instead.
func TestAdaptiveCountsExamplesNotViews(t *testing.T) {
	const n, eta, gamma, c0 = 64, 0.2, 0.5, 1e-9
	train, _ := embedded(t, n)
	tr := newTrainer(t, newModel(t, models.MNISTCNN(models.Tanh), 32, nn.WithSeed(3)), training.TrainerConfig{
		Data:         training.Data{Train: train},
		Rule:         dpoptim.NewSGD(dpoptim.Constant(0.1)),
		Schedule:     training.Schedule{BatchSize: n, Epochs: 1, Sampling: training.Shuffle},
		Seed:         seedPtr(1),
		Augmentation: training.Augmentation{Multiplicity: 2, Augment: datasets.Augment{Crop: true, Pad: 1}},
		Privacy: &training.Privacy{Clip: clipping.Flat{C: c0}, NoiseMultiplier: 1e-3, Delta: 1e-5,
			Adaptive: &dpoptim.AdaptiveClip{TargetQuantile: gamma, LearningRate: eta, CountNoise: 1e-3}},
	})
	if res := run(t, tr); res.Steps != 1 {
		t.Fatalf("%d steps, want 1", res.Steps)
	}
	want := c0 * math.Exp(eta*gamma)
	if got := tr.ClipNorm(); math.Abs(math.Log(got/want)) > 5e-4 {
		t.Errorf("C after one step = %v, want %v (no example unclipped)", got, want)
	}
}

// A target ε is calibrated exactly as with fixed clipping: the same z, recorded for every
// step; the gradient noise multiplier is z_Δ = (z⁻² − (2σ_b)⁻²)^(−½) with σ_b = batch/20.
// EpochMetrics reports C_t.
func TestAdaptiveTrainerCalibration(t *testing.T) {
	train, _ := embedded(t, 600)
	var clips []float64
	mk := func(adaptive *dpoptim.AdaptiveClip) *training.Trainer {
		return newTrainer(t, newModel(t, models.LogisticRegression(), 64, nn.WithSeed(1)), training.TrainerConfig{
			Data:     training.Data{Train: train},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
			Schedule: training.Schedule{BatchSize: 60, Epochs: 2},
			Seed:     seedPtr(2),
			Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 2, Delta: 1e-5, Adaptive: adaptive},
			Callbacks: training.Callbacks{OnEpoch: func(m training.EpochMetrics) error {
				if adaptive != nil {
					clips = append(clips, m.ClipNorm)
				}
				return nil
			}},
		})
	}
	fixed := mk(nil)
	ada := mk(&dpoptim.AdaptiveClip{TargetQuantile: 0.5})
	z := fixed.Plan().NoiseMultiplier
	if got := ada.Plan().NoiseMultiplier; got != z {
		t.Fatalf("adaptive plan z = %v, fixed clipping %v", got, z)
	}
	if ada.Plan().Spent != fixed.Plan().Spent {
		t.Errorf("adaptive plan spends %+v, fixed %+v", ada.Plan().Spent, fixed.Plan().Spent)
	}
	if got, want := ada.GradientNoiseMultiplier(), math.Pow(math.Pow(z, -2)-math.Pow(2*3.0, -2), -0.5); math.Abs(got-want) > 1e-12*want {
		t.Errorf("gradient noise multiplier %v, want z_Δ = %v (z = %v, σ_b = 60/20)", got, want, z)
	}
	if r := ada.Plan().ClipRule; r != "adaptive C0=1 quantile=0.5 lr=0.2 count-noise=3" {
		t.Errorf("clip rule %q", r)
	}
	if fixed.GradientNoiseMultiplier() != z || fixed.ClipNorm() != 1 {
		t.Errorf("fixed clipping: gradient noise %v, clip %v", fixed.GradientNoiseMultiplier(), fixed.ClipNorm())
	}
	run(t, ada)
	if len(clips) != 2 || clips[1] != ada.ClipNorm() || clips[0] == 1 {
		t.Errorf("epoch clip norms %v, final %v", clips, ada.ClipNorm())
	}
	ref := accountant.NewLedger()
	if err := ref.Record(60.0/600, z, ada.Steps()); err != nil {
		t.Fatal(err)
	}
	got, _ := ada.Spent()
	want, _ := ref.Epsilon(1e-5)
	if got != want {
		t.Errorf("ledger ε %+v, a ledger of %d steps at z = %v gives %+v", got, ada.Steps(), z, want)
	}
}

func TestAdaptiveTrainerErrors(t *testing.T) {
	train, _ := embedded(t, 200)
	m := newModel(t, models.LogisticRegression(), 32)
	for name, c := range map[string]struct {
		rule    dpoptim.Rule
		privacy training.Privacy
		batch   int
		want    string
	}{
		"per-layer": {nil, training.Privacy{Clip: clipping.PerLayerEqual(1, 1), NoiseMultiplier: 1, Delta: 1e-5,
			Adaptive: &dpoptim.AdaptiveClip{TargetQuantile: 0.5}}, 20, "flat"},
		"quantile 1": {nil, training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5,
			Adaptive: &dpoptim.AdaptiveClip{TargetQuantile: 1}}, 20, "quantile 1"},
		"quantile 0": {nil, training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5,
			Adaptive: &dpoptim.AdaptiveClip{TargetQuantile: 0}}, 20, "quantile 0"},
		"negative rate": {nil, training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5,
			Adaptive: &dpoptim.AdaptiveClip{TargetQuantile: 0.5, LearningRate: -1}}, 20, "rate -1"},
		// batch 10: σ_b = 0.5, so z = 1 leaves nothing for the gradient.
		"σ_b too small": {nil, training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5,
			Adaptive: &dpoptim.AdaptiveClip{TargetQuantile: 0.5}}, 10, "σ_b = 0.5"},
		"ADP-SGD": {&dpoptim.ADPPolynomial{Eta: 1, A: 19, C: 1}, training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5,
			Adaptive: &dpoptim.AdaptiveClip{TargetQuantile: 0.5}}, 20, "not supported"},
	} {
		rule := c.rule
		if rule == nil {
			rule = dpoptim.NewSGD(dpoptim.Constant(1))
		}
		p := c.privacy
		_, err := training.NewTrainer(m, training.TrainerConfig{Data: training.Data{Train: train}, Rule: rule, Schedule: training.Schedule{BatchSize: c.batch, Epochs: 1}, Privacy: &p})
		if !errors.Is(err, training.ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrConfig naming %q", name, err, c.want)
		}
	}
}

// A checkpoint of an adaptive run does not resume a fixed-clip run, nor one with another
// target quantile.
func TestAdaptiveCheckpointMismatch(t *testing.T) {
	train, _ := embedded(t, 200)
	mk := func(a *dpoptim.AdaptiveClip) *training.Trainer {
		return newTrainer(t, newModel(t, models.LogisticRegression(), 32), training.TrainerConfig{
			Data:     training.Data{Train: train},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(1)),
			Schedule: training.Schedule{BatchSize: 20, Epochs: 1},
			Seed:     seedPtr(4),
			Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5, Adaptive: a},
		})
	}
	ada := mk(&dpoptim.AdaptiveClip{TargetQuantile: 0.5})
	run(t, ada)
	c, err := ada.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	for name, other := range map[string]*training.Trainer{
		"fixed":        mk(nil),
		"quantile 0.6": mk(&dpoptim.AdaptiveClip{TargetQuantile: 0.6}),
	} {
		if err := other.Restore(c); !errors.Is(err, training.ErrMismatch) {
			t.Errorf("%s: Restore err = %v, want ErrMismatch", name, err)
		}
	}
}
