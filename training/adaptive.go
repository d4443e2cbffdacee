package training

import (
	"fmt"
	"math"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/dpoptim"
)

// Adaptive clipping (Privacy.Adaptive) in the trainer: the private step owns C_t, its
// count noise and its update (dpoptim.AdaptiveClip); the trainer clips every chunk of a
// logical batch to the private step's current C_t, adds up the real examples whose norm
// was at most C_t (StepStats: Examples − Clipped) and hands the count to StepAdaptive.
// C_t is in the private step's State, so checkpoints carry it.

// checkAdaptive checks Privacy.Adaptive against the clipping rule and the update rule and
// fills its zero fields with dpoptim's defaults, so that the plan describes (and a
// resumed run compares) the values actually used.
func (t *Trainer) checkAdaptive() error {
	p := t.cfg.Privacy
	a := p.Adaptive
	if a == nil {
		return nil
	}
	if _, ok := p.Clip.(clipping.Flat); !ok {
		return fmt.Errorf("%w: adaptive clipping needs flat clipping (its C is the initial clip norm), not %s", ErrConfig, describeClip(p.Clip))
	}
	if _, ok := t.cfg.Rule.(dpoptim.NoiseScaler); ok {
		return fmt.Errorf("%w: adaptive clipping with %s, whose noise multiplier follows its step size: not supported", ErrConfig, t.cfg.Rule.Name())
	}
	if !(a.TargetQuantile > 0 && a.TargetQuantile < 1) {
		return fmt.Errorf("%w: adaptive clipping: target quantile %v, want a quantile in (0, 1)", ErrConfig, a.TargetQuantile)
	}
	if a.LearningRate == 0 {
		a.LearningRate = dpoptim.DefaultClipLearningRate
	}
	if !(a.LearningRate > 0) || math.IsInf(a.LearningRate, 0) {
		return fmt.Errorf("%w: adaptive clipping: clip learning rate %v, want a finite rate > 0", ErrConfig, a.LearningRate)
	}
	if a.CountNoise == 0 {
		a.CountNoise = dpoptim.DefaultCountNoiseShare * float64(t.plan.BatchSize)
	}
	if !(a.CountNoise > 0) || math.IsInf(a.CountNoise, 0) {
		return fmt.Errorf("%w: adaptive clipping: count noise σ_b = %v, want a finite σ_b > 0", ErrConfig, a.CountNoise)
	}
	return nil
}

// describeAdaptive is the plan's ClipRule for adaptive clipping from initial norm c0.
func describeAdaptive(c0 float64, a dpoptim.AdaptiveClip) string {
	return fmt.Sprintf("adaptive C0=%v quantile=%v lr=%v count-noise=%v", c0, a.TargetQuantile, a.LearningRate, a.CountNoise)
}

// adaptive reports whether the run clips adaptively.
func (t *Trainer) adaptive() bool { return t.private != nil && t.private.Adaptive() }

// clipRule is the clipping rule of the next step: the configured one, or flat clipping to
// the current C_t.
func (t *Trainer) clipRule() clipping.Rule {
	if t.adaptive() {
		return clipping.Flat{C: t.adaptiveClip()}
	}
	return t.cfg.Privacy.Clip
}

// optimizerStep takes the optimizer step of a logical batch of size examples, unclipped
// of which were not clipped (counted for adaptive clipping only).
func (t *Trainer) optimizerStep(size, unclipped int) error {
	if t.adaptive() {
		return t.private.StepAdaptive(t.params, t.grad, size, unclipped)
	}
	return t.opt.Step(t.params, t.grad, size)
}

// ClipNorm returns the clip norm the next step uses: with adaptive clipping the current
// C_t, otherwise the clipping rule's bound; 0 for non-private training.
func (t *Trainer) ClipNorm() float64 {
	if t.private == nil {
		return 0
	}
	return t.private.ClipNorm()
}

// GradientNoiseMultiplier returns the multiplier of the gradient noise of the next step:
// z_Δ with adaptive clipping, otherwise the plan's z (z_t for ADP-SGD); 0 for
// non-private training. The ledger records the plan's z either way.
func (t *Trainer) GradientNoiseMultiplier() float64 {
	if t.private == nil {
		return 0
	}
	return t.private.GradientNoiseMultiplier()
}
