package dpoptim

import (
	"fmt"
	"math"
)

// Default values of [AdaptiveClip]'s zero fields: those of Andrew et al. (2021) and of TF
// Privacy / TensorFlow Federated's adaptive clipping.
const (
	// DefaultClipLearningRate is η_C of the geometric clip update.
	DefaultClipLearningRate = 0.2
	// DefaultCountNoiseShare is σ_b over the expected batch size: σ_b = m/20.
	DefaultCountNoiseShare = 0.05
)

// AdaptiveClip configures adaptive clipping (Andrew, Thakkar, McMahan, Ramaswamy,
// "Differentially Private Learning with Adaptive Clipping", NeurIPS 2021; TF Privacy's
// QuantileAdaptiveClipSumQuery with geometric updates). The clip norm C_t then tracks the
// TargetQuantile of the per-example gradient norms:
//
//	b_i = 1[‖g_i‖ ≤ C_t]                               (example i was not clipped)
//	b̃_t = (Σ_{i∈B} (b_i − ½) + N(0, σ_b²)) / m + ½      m = q·n, the EXPECTED batch size
//	b̃_t ← min(1, max(0, b̃_t))
//	C_{t+1} = C_t · exp(−η_C · (b̃_t − γ))
//
// Each centred record b_i − ½ has sensitivity ½, so the count is a Gaussian mechanism with
// noise multiplier 2σ_b. The clipped gradient sum (sensitivity C_t) gets noise of
// standard deviation z_Δ·C_t, where
//
//	z_Δ = (z⁻² − (2σ_b)⁻²)^(−½),   defined for z < 2σ_b,
//
// so that the pair (sum, count) is one Gaussian mechanism on the concatenated vector
// with noise multiplier z: 1/z_Δ² + 1/(2σ_b)² = 1/z² (the paper's Theorem 1). The
// accountant records z for every step, as for fixed clipping, so adaptive clipping costs
// no ε beyond the plan's. C_{t+1} is computed from the released noisy count alone
// (post-processing).
type AdaptiveClip struct {
	// TargetQuantile γ in (0, 1): the fraction of examples that should not be clipped
	// (0.5: the median norm). Required.
	TargetQuantile float64
	// LearningRate η_C > 0 of the geometric update; 0 means DefaultClipLearningRate
	// (0.2): C changes by at most a factor e^{η_C} per step.
	LearningRate float64
	// CountNoise σ_b > 0, the standard deviation of the noise added to the count of
	// unclipped examples (in examples); 0 means DefaultCountNoiseShare·m = m/20 for the
	// expected batch size m. It must exceed z/2.
	CountNoise float64
}

// AdaptiveNoiseMultiplier returns z_Δ = (z⁻² − (2σ_b)⁻²)^(−½), the noise multiplier of the
// clipped gradient sum when a count with noise σ_b is released beside it and the pair
// must spend what one Gaussian mechanism with multiplier z spends. It returns an error
// wrapping ErrConfig unless z > 0 and σ_b > z/2 (finite).
func AdaptiveNoiseMultiplier(z, countNoise float64) (float64, error) {
	if z == 0 || CheckNoiseMultiplier(z) != nil {
		return 0, fmt.Errorf("%w: adaptive clipping: noise multiplier z = %v, want a finite z > 0", ErrConfig, z)
	}
	if !(countNoise > 0) || math.IsInf(countNoise, 0) {
		return 0, fmt.Errorf("%w: adaptive clipping: count noise σ_b = %v, want a finite σ_b > 0", ErrConfig, countNoise)
	}
	if !(2*countNoise > z) {
		return 0, fmt.Errorf("%w: adaptive clipping: count noise σ_b = %v is too small for noise multiplier z = %v: the count alone would spend the budget (need σ_b > z/2 = %v; raise σ_b or the batch size, or lower z)", ErrConfig, countNoise, z, z/2)
	}
	// 1/z_Δ² = 1/z² − 1/(2σ_b)² = (2σ_b − z)(2σ_b + z) / (2σ_b·z)², the factored form
	// losing no digits when 2σ_b ≫ z.
	s := 2 * countNoise
	zd := s * z / math.Sqrt((s-z)*(s+z))
	if math.IsInf(zd, 0) || math.IsNaN(zd) {
		return 0, fmt.Errorf("%w: adaptive clipping: σ_b = %v and z = %v give no finite gradient noise multiplier", ErrConfig, countNoise, z)
	}
	return zd, nil
}

// adaptive is a Private step's adaptive clipping state.
type adaptive struct {
	gamma, eta, sigmaB float64
	zDelta             float64 // the gradient's noise multiplier
	m                  float64 // q·n
	c                  float64 // C_t, the clip norm of the next step
}

// newAdaptive checks cfg against z and the expected batch size m.
func newAdaptive(cfg AdaptiveClip, z, c0, m float64) (*adaptive, error) {
	if !(cfg.TargetQuantile > 0 && cfg.TargetQuantile < 1) {
		return nil, fmt.Errorf("%w: adaptive clipping: target quantile γ = %v, want γ in (0, 1)", ErrConfig, cfg.TargetQuantile)
	}
	a := &adaptive{gamma: cfg.TargetQuantile, eta: cfg.LearningRate, sigmaB: cfg.CountNoise, m: m, c: c0}
	if a.eta == 0 {
		a.eta = DefaultClipLearningRate
	}
	if !(a.eta > 0) || math.IsInf(a.eta, 0) {
		return nil, fmt.Errorf("%w: adaptive clipping: learning rate η_C = %v, want a finite η_C > 0", ErrConfig, cfg.LearningRate)
	}
	if a.sigmaB == 0 {
		a.sigmaB = DefaultCountNoiseShare * m
	}
	var err error
	if a.zDelta, err = AdaptiveNoiseMultiplier(z, a.sigmaB); err != nil {
		return nil, err
	}
	return a, nil
}

// fraction returns the noisy, clamped fraction b̃ of unclipped examples given the count
// of unclipped ones among batch examples and one standard normal draw.
func (a *adaptive) fraction(unclipped, batch int, normal float64) float64 {
	b := (float64(unclipped)-0.5*float64(batch)+a.sigmaB*normal)/a.m + 0.5
	return min(1, max(0, b))
}

// next returns C_{t+1} for the noisy fraction b.
func (a *adaptive) next(b float64) float64 {
	return a.c * math.Exp(-a.eta*(b-a.gamma))
}

// stateClip names C_t in an adaptive Private step's State.Scalars.
const stateClip = "clip"

// StepAdaptive is [Private.Step] with adaptive clipping: clippedSum must be the sum of the
// batch's gradients clipped to [Private.ClipNorm], and unclipped the number of the
// batchSize real examples of the logical batch whose gradient norm was at most that
// (nn.StepStats: Examples − Clipped). It records (q, z, 1), adds N(0, (z_Δ·C_t)²) to each
// coordinate of the sum and N(0, σ_b²) to the centred count, updates the parameters as
// Step does, and then sets C_{t+1} from the noisy count ([AdaptiveClip]). It returns
// ErrConfig for a Private without adaptive clipping. On error C is unchanged.
func (p *Private) StepAdaptive(params, clippedSum []float64, batchSize, unclipped int) error {
	if p.rule == nil {
		return errZeroPrivate
	}
	if p.ada == nil {
		return fmt.Errorf("%w: %s: StepAdaptive without adaptive clipping: use Step", ErrConfig, p.Name())
	}
	if batchSize < 0 || unclipped < 0 || unclipped > batchSize {
		return fmt.Errorf("%w: %s: %d unclipped examples in a batch of %d", ErrConfig, p.Name(), unclipped, batchSize)
	}
	return p.privateStep(params, clippedSum, batchSize, unclipped)
}

// ClipNorm returns the clip norm the next step's gradients must be clipped to: C_t with
// adaptive clipping, the configured ClipNorm otherwise.
func (p *Private) ClipNorm() float64 {
	if p.ada != nil {
		return p.ada.c
	}
	return p.c
}

// Adaptive reports whether the clip norm is adaptive.
func (p *Private) Adaptive() bool { return p.ada != nil }

// GradientNoiseMultiplier returns the multiplier of the gradient noise of the next step
// (its standard deviation over ClipNorm): z_Δ with adaptive clipping, z_t otherwise. The
// Recorder receives NoiseMultiplier, not this.
func (p *Private) GradientNoiseMultiplier() float64 {
	if p.ada != nil {
		return p.ada.zDelta
	}
	return p.multiplier(p.step)
}

// CountNoise returns σ_b, the standard deviation of the noise on the count of unclipped
// examples (0 without adaptive clipping).
func (p *Private) CountNoise() float64 {
	if p.ada == nil {
		return 0
	}
	return p.ada.sigmaB
}

// adaptClip draws the count noise and returns C_{t+1} (C_t itself without adaptive
// clipping, drawing nothing).
func (p *Private) adaptClip(batchSize, unclipped int) (float64, error) {
	if p.ada == nil {
		return p.c, nil
	}
	c := p.ada.next(p.ada.fraction(unclipped, batchSize, p.noise.src.Normal()))
	if !(c > 0) || math.IsInf(c, 0) {
		return 0, fmt.Errorf("%w: %s: adaptive clip norm left the floating-point range (%v) at step %d", ErrNonFinite, p.Name(), c, p.step)
	}
	return c, nil
}

// adaptiveState returns C_t from an adaptive Private's state: exactly one scalar, "clip",
// finite and > 0. Without adaptive clipping it returns 0.
func (p *Private) adaptiveState(s State) (float64, error) {
	if p.ada == nil {
		return 0, nil
	}
	c, ok := s.Scalars[stateClip]
	if !ok || len(s.Scalars) != 1 {
		return 0, fmt.Errorf("adaptive clipping needs exactly the scalar %q, got %v", stateClip, s.Scalars)
	}
	if !(c > 0) || math.IsInf(c, 0) {
		return 0, fmt.Errorf("adaptive clip norm %v, want a finite C > 0", c)
	}
	return c, nil
}
