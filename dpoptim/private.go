package dpoptim

import (
	"fmt"
	"math"
	"runtime"
	"strings"

	"github.com/privtrain/privtrain/internal/faults"
)

// PrivateConfig configures a [Private] step.
type PrivateConfig struct {
	// NoiseMultiplier z ≥ 0: each coordinate of the clipped sum gets N(0, (z_t·C)²) noise,
	// z_t = z (or z·NoiseScale(t) for an ADP-SGD rule). z = 0 adds no noise and gives no
	// privacy; the Recorder is still told z = 0 (an accountant must report ε = ∞ or
	// refuse it).
	NoiseMultiplier float64
	// ClipNorm C > 0 is the L2 sensitivity of the clipped sum: the clipping's total bound
	// (flat: C; per-layer: √(Σ C_l²)).
	ClipNorm float64
	// SampleRate q in (0, 1] is the Poisson sampling probability of each example.
	SampleRate float64
	// DatasetSize n ≥ 1; the noisy sum is divided by the expected batch size q·n.
	DatasetSize int
	// Recorder receives (q, z_t, 1) for every step, before the update is applied.
	// Required.
	Recorder Recorder
	// Smoother, if not nil, post-processes the noisy gradient before the rule: with a
	// *smoothing.Laplacian it makes DP-LSSGD / DP-LSAdam.
	Smoother Smoother
	// Noise is the random source; nil means a fresh [NewSecureNoise].
	Noise *Noise
	// Adaptive, if not nil, makes the clip norm adaptive ([AdaptiveClip]): ClipNorm is
	// then the initial C_0, steps are taken with [Private.StepAdaptive], the gradient
	// noise multiplier is z_Δ > z and the Recorder still receives z. Not available for a
	// NoiseScaler rule (ADP-SGD).
	Adaptive *AdaptiveClip
}

// CheckNoiseMultiplier is the one range check of a noise multiplier z, from the flag to
// the draw: it returns nil for a finite z ≥ 0 and otherwise an error wrapping ErrConfig.
// z = 0 is in range (NewPrivate then adds no noise); a caller that gives 0 another
// meaning (nn: calibrate for a target ε) or refuses it (cmd/train's -noise) says so
// itself. NewPrivate, AdaptiveNoiseMultiplier, nn's Trainer and cmd/train call it.
func CheckNoiseMultiplier(z float64) error {
	if !(z >= 0) || math.IsInf(z, 0) {
		return fmt.Errorf("%w: noise multiplier z = %v, want a finite z ≥ 0", ErrConfig, z)
	}
	return nil
}

// Private is one private training step around an update rule (DP-X for rule X): it adds
// Gaussian noise to the clipped gradient sum, divides by the expected batch size, smooths
// if asked, hands the result to the rule and records the step's privacy cost. See the
// package documentation for the data path.
//
// A Private keeps a work buffer and is not safe for concurrent use.
type Private struct {
	rule     Rule
	scaler   NoiseScaler // the rule, if it matches noise to step size
	z, c, q  float64
	invBatch float64 // 1/(q·n)
	recorder Recorder
	smoother Smoother
	noise    *Noise
	ada      *adaptive // nil: fixed clip norm c

	step  int
	buf   []float64
	ahead []float64 // the next step's standard normals, drawn ahead (privrand.PrefetchGaussian)
}

// errZeroPrivate is the error of a Private not made by NewPrivate.
var errZeroPrivate = fmt.Errorf("%w: a zero Private: build it with NewPrivate", ErrConfig)

// NewPrivate returns the private step wrapping rule. The zero Private is not usable: its
// Step and SetState return ErrConfig.
func NewPrivate(rule Rule, cfg PrivateConfig) (*Private, error) {
	if rule == nil {
		return nil, fmt.Errorf("%w: nil rule", ErrConfig)
	}
	if err := CheckNoiseMultiplier(cfg.NoiseMultiplier); err != nil {
		return nil, err
	}
	if !(cfg.ClipNorm > 0) || math.IsInf(cfg.ClipNorm, 0) {
		return nil, fmt.Errorf("%w: clip norm C = %v, want a finite C > 0", ErrConfig, cfg.ClipNorm)
	}
	if !(cfg.SampleRate > 0 && cfg.SampleRate <= 1) {
		return nil, fmt.Errorf("%w: sampling rate q = %v, want q in (0, 1]", ErrConfig, cfg.SampleRate)
	}
	if cfg.DatasetSize < 1 {
		return nil, fmt.Errorf("%w: dataset size n = %d, want n ≥ 1", ErrConfig, cfg.DatasetSize)
	}
	if cfg.Recorder == nil {
		return nil, fmt.Errorf("%w: nil Recorder: every private step must be recorded", ErrConfig)
	}
	p := &Private{
		rule:     rule,
		z:        cfg.NoiseMultiplier,
		c:        cfg.ClipNorm,
		q:        cfg.SampleRate,
		invBatch: 1 / (cfg.SampleRate * float64(cfg.DatasetSize)),
		recorder: cfg.Recorder,
		smoother: cfg.Smoother,
		noise:    cfg.Noise,
	}
	if s, ok := rule.(NoiseScaler); ok {
		p.scaler = s
	}
	if cfg.Adaptive != nil {
		if p.scaler != nil {
			return nil, fmt.Errorf("%w: adaptive clipping with %s, whose noise multiplier follows its step size: not supported", ErrConfig, rule.Name())
		}
		var err error
		if p.ada, err = newAdaptive(*cfg.Adaptive, p.z, p.c, cfg.SampleRate*float64(cfg.DatasetSize)); err != nil {
			return nil, err
		}
	}
	if p.noise == nil {
		var err error
		if p.noise, err = NewSecureNoise(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Name returns "DP-" + the rule's name, with "LS" for Laplacian smoothing ("DP-SGD",
// "DP-LSAdam"); an ADP-SGD rule ("ADP-SGD (…)") keeps its "ADP-" prefix ("ADP-LSSGD (…)").
func (p *Private) Name() string {
	name, prefix := p.rule.Name(), "DP-"
	if rest, ok := strings.CutPrefix(name, "ADP-"); ok {
		name, prefix = rest, "ADP-"
	}
	if p.smoother != nil {
		prefix += "LS"
	}
	return prefix + name
}

// Rule returns the wrapped rule.
func (p *Private) Rule() Rule { return p.rule }

// Noise returns the random source (its String says "secure" or "seeded(s)").
func (p *Private) Noise() *Noise { return p.noise }

// NoiseMultiplier returns z_t, the noise multiplier the next step will use and record.
func (p *Private) NoiseMultiplier() float64 { return p.multiplier(p.step) }

func (p *Private) multiplier(t int) float64 { return StepMultiplier(p.z, p.scaler, t) }

// StepMultiplier is z_t, the noise multiplier of step t (0-based) for base multiplier z:
// z itself, or z·scaler.NoiseScale(t) for a rule whose noise follows its step size
// (ADP-SGD). It is the one formula: Private draws and records it, and a plan's ledger
// (package training, a checkpoint's ledger check) is rebuilt with it, so that the two
// agree bit for bit.
func StepMultiplier(z float64, scaler NoiseScaler, t int) float64 {
	if scaler == nil {
		return z
	}
	return z * scaler.NoiseScale(t)
}

// Step performs one private step: it records (q, z_t, 1), then sets
//
//	g = (clippedSum + N(0, (z_t·C)²·I)) / (q·n),  g ← Smoother(g) if set,
//
// and calls the rule with params and g. batchSize, the realised size of the logical batch,
// is not used: normalising by it would make the step depend on data that the noise does
// not protect. It is accepted so that Private satisfies [Optimizer].
//
// Inputs are checked before anything is recorded or drawn: mismatched lengths and NaN or
// infinite entries of clippedSum give errors and change nothing. An error from the
// Recorder also changes nothing. An error from the smoother or rule comes after the
// step was recorded, and params are left unchanged.
func (p *Private) Step(params, clippedSum []float64, batchSize int) error {
	if p.ada != nil {
		return fmt.Errorf("%w: %s: adaptive clipping needs the count of unclipped examples: use StepAdaptive", ErrConfig, p.Name())
	}
	return p.privateStep(params, clippedSum, batchSize, 0)
}

// privateStep is Step, and with adaptive clipping StepAdaptive (unclipped is the count).
func (p *Private) privateStep(params, clippedSum []float64, batchSize, unclipped int) error {
	if p.rule == nil {
		return errZeroPrivate
	}
	d := len(params)
	if len(clippedSum) != d {
		return fmt.Errorf("%w: %s: %d parameters, clipped sum of length %d", ErrLength, p.Name(), d, len(clippedSum))
	}
	if p.buf != nil && len(p.buf) != d {
		return fmt.Errorf("%w: %s: built for %d parameters, got %d", ErrLength, p.Name(), len(p.buf), d)
	}
	if l, ok := p.smoother.(interface{ Len() int }); ok && l.Len() != d {
		return fmt.Errorf("%w: %s: smoother for %d parameters, got %d", ErrLength, p.Name(), l.Len(), d)
	}
	if i := firstNonFinite(clippedSum); i >= 0 {
		return fmt.Errorf("%w: %s: clipped sum[%d] = %v", ErrNonFinite, p.Name(), i, clippedSum[i])
	}
	z := p.multiplier(p.step)
	if CheckNoiseMultiplier(z) != nil || (z == 0 && p.z > 0) {
		return fmt.Errorf("%w: %s: noise multiplier %v at step %d", ErrConfig, p.Name(), z, p.step)
	}
	if err := p.recorder.Record(p.q, z, 1); err != nil {
		return fmt.Errorf("dpoptim: %s: recording step %d (q = %v, z = %v): %w", p.Name(), p.step, p.q, z, err)
	}
	if p.buf == nil {
		p.buf = make([]float64, d)
	}
	g := p.buf
	std, inv := z*p.c, p.invBatch
	if p.ada != nil {
		std = p.ada.zDelta * p.ada.c
	}
	std, inv = faults.Noise(std, inv, batchSize) // unchanged unless an audit test broke it
	copy(g, clippedSum)
	p.noise.src.AddGaussian(g, std)
	for i := range g {
		g[i] *= inv
	}
	nextClip, err := p.adaptClip(batchSize, unclipped)
	if err != nil {
		return err
	}
	if p.smoother != nil {
		if err := p.smoother.Smooth(g); err != nil {
			return fmt.Errorf("dpoptim: %s: smoothing: %w", p.Name(), err)
		}
	}
	if err := p.rule.Step(params, g); err != nil {
		return fmt.Errorf("dpoptim: %s: %w", p.Name(), err)
	}
	if p.ada != nil {
		p.ada.c = nextClip
	}
	p.step++
	// Draw the next step's noise while its gradients are computed: the same values, taken
	// by the next AddGaussian (privrand.PrefetchGaussian). Small models gain nothing from
	// the goroutine, and a run without noise draws none.
	if d >= prefetchMin && d <= prefetchMax && runtime.GOMAXPROCS(0) > 1 && (p.ada != nil || p.multiplier(p.step) > 0) {
		if len(p.ahead) != d {
			p.ahead = make([]float64, d)
		}
		p.noise.src.PrefetchGaussian(p.ahead)
	}
	return nil
}

// Private draws the next step's noise ahead for prefetchMin to prefetchMax parameters:
// below, the draw (about 10 ns a value) is too short to be worth a goroutine (the MNIST
// CNN's 26,010: its 0.3 ms draw ahead left the AVX2 step's wall time as it was and cost
// 4–6 % more CPU time, in 3 alternating rounds); above, the
// residual networks' 2.4–2.75 M parameters, it is a few per cent of their second-long
// step, and its buffer (8 bytes a parameter, 22 MB) would count against WRN-16-4's 1 GB.
const prefetchMin, prefetchMax = 1 << 16, 1 << 21

// firstNonFinite returns the index of the first NaN or ±Inf in v, or −1.
func firstNonFinite(v []float64) int {
	for i, x := range v {
		if x-x != 0 { // NaN − NaN and Inf − Inf are NaN
			return i
		}
	}
	return -1
}

// State returns the step count (the steps recorded), the noise generator encoded by
// [Noise.MarshalBinary] and the rule's State. With a seeded Noise, a Private restored from
// it continues bit for bit.
func (p *Private) State() State {
	if p.rule == nil {
		return State{}
	}
	noise, err := p.noise.MarshalBinary()
	if err != nil { // not reachable: ChaCha8 encoding does not fail
		panic(err)
	}
	rule := p.rule.State()
	s := State{Step: p.step, Noise: noise, Rule: &rule}
	if p.ada != nil {
		s.Scalars = map[string]float64{stateClip: p.ada.c}
	}
	return s
}

// SetState restores a state returned by State. A secure generator gets a fresh secure
// key (see [Noise.MarshalBinary]); a seeded one resumes where it stopped.
func (p *Private) SetState(state State) error {
	if p.rule == nil {
		return errZeroPrivate
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrState, p.Name(), fmt.Sprintf(format, args...))
	}
	switch {
	case state.Step < 0:
		return bad("step %d, want ≥ 0", state.Step)
	case len(state.Vectors) > 0 || (p.ada == nil && len(state.Scalars) > 0):
		return bad("vectors or scalars of its own (%v); the rule's belong in Rule", state)
	case state.Noise == nil:
		return bad("no noise generator")
	case state.Rule == nil:
		return bad("no rule state")
	}
	clip, err := p.adaptiveState(state)
	if err != nil {
		return bad("%v", err)
	}
	var noise Noise
	if err := noise.UnmarshalBinary(state.Noise); err != nil {
		return err
	}
	// The rule validates last and leaves itself unchanged on error, so a failure leaves
	// p unchanged.
	if err := p.rule.SetState(*state.Rule); err != nil {
		return err
	}
	p.step = state.Step
	*p.noise = noise
	if p.ada != nil {
		p.ada.c = clip
	}
	return nil
}
