package audit

import (
	"fmt"
	"math"
	"slices"

	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// Common holds the settings that [Config] and [MultiConfig] share: the DP-SGD training
// being audited and the confidence and guesses of the bound. Both embed it; a zero field
// means the default of the audit that embeds it (see Config and MultiConfig).
type Common struct {
	// BatchSize is the expected logical batch size b.
	BatchSize int
	// Epochs ≥ 1: Epochs·⌈n/b⌉ steps (per run).
	Epochs int
	// Epsilon is the target ε the noise is calibrated for (unless NoiseMultiplier is
	// set).
	Epsilon float64
	// NoiseMultiplier, if > 0, fixes z instead; the audit then compares with the ε the
	// ledger reports for it.
	NoiseMultiplier float64
	// Delta in (0, 1) (default 1e-5): the δ of the accountant's ε and of the bound.
	Delta float64
	// Clip is the flat clipping norm C (default 0.1, below every canary's gradient norm,
	// so that each canary contributes exactly C).
	Clip float64
	// LearningRate of the SGD steps; 0 picks one that keeps every canary's row near its
	// start (its logit margin within about ±0.2 of 0), where the canary's gradient has
	// norm above C and a fixed direction. The bound does not depend on it otherwise.
	LearningRate float64
	// Confidence in (0, 1) (default 0.95): the bound holds with this probability.
	Confidence float64
	// Guesses lists the guess counts r tried, each in two ways: r/2 "in" guesses for the
	// highest scores and r/2 "out" for the lowest, and r "in" guesses only. The confidence
	// is split over all of them (Bonferroni), so the best one's bound is valid.
	Guesses []int
	// Seed, if not nil, makes the coins, the initial weights, the sampling and the noise
	// reproducible (a multi-run audit derives each run's seed from it). nil draws them
	// with secure keys.
	Seed *uint64
}

// defaults fills the zero fields whose defaults both audits share, and ε (when no noise
// multiplier is fixed) with the audit's own default.
func (c *Common) defaults(epsilon float64) {
	setDefault(&c.Delta, 1e-5)
	setDefault(&c.Clip, 0.1)
	setDefault(&c.Confidence, 0.95)
	if c.NoiseMultiplier == 0 {
		setDefault(&c.Epsilon, epsilon)
	}
}

// check checks the fields after defaults.
func (c *Common) check() error {
	switch {
	case c.Epochs < 1:
		return fmt.Errorf("%w: %d epochs, want ≥ 1", ErrConfig, c.Epochs)
	case !(c.Epsilon >= 0) || math.IsInf(c.Epsilon, 0):
		return fmt.Errorf("%w: ε = %v, want a finite ε > 0", ErrConfig, c.Epsilon)
	case !(c.NoiseMultiplier >= 0) || math.IsInf(c.NoiseMultiplier, 0):
		return fmt.Errorf("%w: noise multiplier %v, want a finite z > 0", ErrConfig, c.NoiseMultiplier)
	case !(c.Delta > 0 && c.Delta < 1):
		return fmt.Errorf("%w: δ = %v, want δ in (0, 1)", ErrConfig, c.Delta)
	case !(c.Clip > 0) || math.IsInf(c.Clip, 0):
		return fmt.Errorf("%w: clip %v, want a finite C > 0", ErrConfig, c.Clip)
	case !(c.LearningRate >= 0) || math.IsInf(c.LearningRate, 0):
		return fmt.Errorf("%w: learning rate %v, want a finite rate > 0 (or 0 for automatic)", ErrConfig, c.LearningRate)
	case !(c.Confidence > 0 && c.Confidence < 1):
		return fmt.Errorf("%w: confidence %v, want it in (0, 1)", ErrConfig, c.Confidence)
	}
	return nil
}

// guesses fills Guesses, when nil, with the counts of candidates up to m (m rounded
// down to even when none is), copies them, and checks that each is even and in [2, m].
func (c *Common) guesses(candidates func(yield func(int) bool), m int) error {
	if c.Guesses == nil {
		for r := range candidates {
			if r > m {
				break
			}
			c.Guesses = append(c.Guesses, r)
		}
		if len(c.Guesses) == 0 {
			c.Guesses = []int{m &^ 1}
		}
	}
	c.Guesses = slices.Clone(c.Guesses)
	for _, r := range c.Guesses {
		if r < 2 || r > m || r%2 != 0 {
			return fmt.Errorf("%w: guess count %d, want an even count in [2, %d]", ErrConfig, r, m)
		}
	}
	return nil
}

// autoLearningRate is the learning rate when LearningRate is 0, for a run of steps at
// expected batch b, noise multiplier z, sampling rate q and clipping norm clip: the
// margin of a canary's row moves by lr·C/b per inclusion and by noise of standard
// deviation lr·z·C·√2/b per step; keep both, summed over the run, near 0.2.
func autoLearningRate(b, steps int, z, q, clip float64) float64 {
	return 0.2 * float64(b) / (clip * math.Sqrt(2*float64(steps)) * max(z, q*math.Sqrt(float64(steps)), 1e-3))
}

// model is the audited network: two-class logistic regression without bias on dim
// inputs, in float64, its initial weights seeded by Seed when set.
func (c *Common) model(name string, dim int) (nn.Spec, []nn.Option) {
	spec := nn.Spec{
		Name:       name,
		InputShape: []int{dim},
		NumClasses: 2,
		Layers:     []layers.Layer{layers.Dense{Units: 2, NoBias: true}},
	}
	opts := []nn.Option{nn.WithDType(nn.Float64)}
	if c.Seed != nil {
		opts = append(opts, nn.WithSeed(*c.Seed))
	}
	return spec, opts
}

// setDefault sets *v to d when it is zero (an unset Config field).
func setDefault[T int | float64](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}
