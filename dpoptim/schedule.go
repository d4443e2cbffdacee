package dpoptim

import (
	"fmt"
	"math"
)

// The schedules are plain values: build them as literals. A rate that comes out
// negative, NaN or infinite (InverseSqrt with A = C = 0, say) is rejected by the rule at
// the step that would use it, with ErrConfig.

// Constant is a fixed learning rate.
type Constant float64

// Rate returns c for every step.
func (c Constant) Rate(int) float64 { return float64(c) }

// StepDecay is Initial until step At and Initial·Factor from step At on: the DP-LSSGD CNN
// runs use Factor 0.1 at step 10,000. Zero values: At 0 decays from the first step;
// Factor 0 is rejected at the first step (it would stop training silently), so set it
// (1 for no decay).
type StepDecay struct {
	Initial float64
	At      int
	Factor  float64
}

func (s StepDecay) check() error {
	if !(s.Factor > 0) || math.IsInf(s.Factor, 0) || s.At < 0 {
		return fmt.Errorf("%w: step decay by %v at step %d, want a finite factor > 0 at a step ≥ 0", ErrConfig, s.Factor, s.At)
	}
	return nil
}

// Rate returns the learning rate of step t.
func (s StepDecay) Rate(t int) float64 {
	if t < s.At {
		return s.Initial
	}
	return s.Initial * s.Factor
}

// InverseTime is A/t with t counted from 1 (step 0 has rate A), the a/t schedule of the
// DP-LSSGD logistic-regression experiments.
type InverseTime struct {
	A float64
}

// Rate returns A/(t+1).
func (s InverseTime) Rate(t int) float64 { return s.A / float64(t+1) }

// InverseSqrt is Eta/√(A + C·t), the polynomially decaying step of the ADP-SGD paper
// (e.g. Eta = 1, A = 20, C = 1: η_t = 1/√(20 + t)).
type InverseSqrt struct {
	Eta, A, C float64
}

// Rate returns Eta/√(A + C·t).
func (s InverseSqrt) Rate(t int) float64 { return s.Eta / math.Sqrt(s.A+s.C*float64(t)) }

// Cosine decays from Initial to Final over Steps steps along half a cosine and stays at
// Final afterwards:
//
//	rate(t) = Final + (Initial − Final)·(1 + cos(π·min(t, Steps)/Steps))/2
//
// so rate(0) = Initial, rate(Steps/2) = (Initial + Final)/2 and rate(t) = Final for
// t ≥ Steps. It is optax's cosine_decay_schedule (init_value Initial, decay_steps Steps,
// alpha Final/Initial) and the closed form of PyTorch's CosineAnnealingLR (η_max
// Initial, η_min Final, T_max Steps) up to T_max; beyond it PyTorch's recursive form
// rises again (a restart), this one does not. Zero values: Final 0 decays to zero (the
// usual choice); Steps 0 is rejected at the first step (there is no decay length to
// default to), as are a negative or non-finite Initial or Final and Final > Initial
// (a cosine increase is almost certainly swapped arguments).
type Cosine struct {
	Initial, Final float64
	Steps          int
}

func (s Cosine) check() error {
	switch {
	case s.Steps < 1:
		return fmt.Errorf("%w: cosine decay over %d steps, want ≥ 1", ErrConfig, s.Steps)
	case !(s.Final >= 0) || math.IsInf(s.Initial, 0) || !(s.Final <= s.Initial):
		return fmt.Errorf("%w: cosine decay from %v to %v, want finite rates 0 ≤ final ≤ initial", ErrConfig, s.Initial, s.Final)
	}
	return nil
}

// Rate returns the learning rate of step t.
func (s Cosine) Rate(t int) float64 {
	if t >= s.Steps {
		return s.Final
	}
	c := (1 + math.Cos(math.Pi*float64(max(t, 0))/float64(s.Steps))) / 2
	return s.Final + (s.Initial-s.Final)*c
}

// Warmup rises linearly to the rate of After for the first Steps steps and then hands
// over to After, shifted by Steps steps:
//
//	rate(t) = base·(Start + (1 − Start)·t/Steps)   for t < Steps, base = After.Rate(0)
//	rate(t) = After.Rate(t − Steps)                for t ≥ Steps
//
// With Start = 0 this is optax's linear_schedule(0, base, Steps) joined to After by
// optax.join_schedules (warmup_cosine_decay_schedule is Warmup{After: Cosine{…}}), and
// PyTorch's LinearLR(start_factor=Start, total_iters=Steps) chained to After with
// SequentialLR. Step 0 then has rate 0: it still takes its private step (and spends its
// privacy) but moves no parameter; set Start > 0 (PyTorch's default is 1/3) to avoid it.
//
// Zero values: Steps 0 is no warm-up (After from step 0); Start 0 starts from rate 0;
// After is required (nil is rejected at the first step), as are Steps < 0 and Start
// outside [0, 1].
type Warmup struct {
	Steps int
	Start float64
	After Schedule
}

func (s Warmup) check() error {
	switch {
	case s.After == nil:
		return fmt.Errorf("%w: warm-up without a schedule to hand over to", ErrConfig)
	case s.Steps < 0:
		return fmt.Errorf("%w: warm-up over %d steps, want ≥ 0", ErrConfig, s.Steps)
	case !(s.Start >= 0 && s.Start <= 1):
		return fmt.Errorf("%w: warm-up from %v of the rate, want a fraction in [0, 1]", ErrConfig, s.Start)
	}
	if c, ok := s.After.(interface{ check() error }); ok {
		return c.check()
	}
	return nil
}

// Rate returns the learning rate of step t.
func (s Warmup) Rate(t int) float64 {
	if s.After == nil {
		return math.NaN() // rejected by the rules, as check says
	}
	if t >= s.Steps {
		return s.After.Rate(t - s.Steps)
	}
	return s.After.Rate(0) * (s.Start + (1-s.Start)*float64(t)/float64(s.Steps))
}

// rate returns the learning rate of step t, or an error if there is no schedule or the
// rate is negative, NaN or infinite.
func rate(s Schedule, t int) (float64, error) {
	if s == nil {
		return 0, fmt.Errorf("%w: nil learning-rate schedule", ErrConfig)
	}
	if c, ok := s.(interface{ check() error }); ok {
		if err := c.check(); err != nil {
			return 0, err
		}
	}
	r := s.Rate(t)
	if !(r >= 0) || math.IsInf(r, 0) {
		return 0, fmt.Errorf("%w: learning rate %v at step %d from %T %+v, want a finite rate ≥ 0",
			ErrConfig, r, t, s, s)
	}
	return r, nil
}
