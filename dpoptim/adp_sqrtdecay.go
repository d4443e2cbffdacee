package dpoptim

import (
	"fmt"
	"math"
)

// ADPSqrtDecay is ADP-SGD with the ADP paper's second schedule (its Table 1 and 4, the
// orange curves of its Figure 2): a step size that falls like √t from Start to End over a
// horizon of Steps steps,
//
//	η_t = Eta·(Start − α_T·√t),  α_T = (Start − End)/√T,  t = 0 … T−1,
//
// so that η_T = Eta·End. The paper runs Eta = 1, Start = 0.1, End = 1e-10 and T the
// number of iterations of the run (196 × epochs):
//
//	&dpoptim.ADPSqrtDecay{Eta: 1, Start: 0.1, End: 1e-10, Steps: T}
//
// In Algorithm 1's terms η_t = Eta/b_{t+1} with b_{t+1} = 1/(Start − α_T√t), and the noise is
// matched to the step as for [ADPPolynomial]: α_{t+1}² = b_{t+1}, i.e. NoiseScale(t) =
// (Start − α_T√t)^{−1/2}. As the step approaches End the noise multiplier grows without
// bound (at End = 1e-10 it reaches 10⁵ on the last step): such steps cost almost no
// privacy, and a [Private] step records each one with its own multiplier, so the
// accountant composes exactly what was added. With ConstantNoise set, α ≡ 1 and the rule
// is DP-SGD with the same step sizes (the paper's baseline).
//
// The schedule is fixed by Steps before training; a step past the horizon is refused
// with ErrConfig (the rate would turn negative). Zero values: Eta and Steps are required;
// Start must exceed End ≥ 0 (End = 0 makes the last planned step's rate
// Eta·Start·(1 − √(1 − 1/T)) > 0 still).
type ADPSqrtDecay struct {
	Eta, Start, End float64
	Steps           int
	ConstantNoise   bool

	step int
}

// Name returns "ADP-SGD (√t decay)", or "SGD (√t decay)" with ConstantNoise.
func (s *ADPSqrtDecay) Name() string {
	if s.ConstantNoise {
		return "SGD (√t decay)"
	}
	return "ADP-SGD (√t decay)"
}

func (s *ADPSqrtDecay) check() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if !(s.Eta > 0) || !finite(s.Eta) || !(s.End >= 0) || !(s.Start > s.End) || !finite(s.Start) || s.Steps < 1 {
		return fmt.Errorf("%w: %s: η = %v, start %v, end %v, T = %d; want finite η > 0, start > end ≥ 0, T ≥ 1",
			ErrConfig, s.Name(), s.Eta, s.Start, s.End, s.Steps)
	}
	return nil
}

// slope returns α_T = (Start − End)/√T.
func (s *ADPSqrtDecay) slope() float64 {
	return (s.Start - s.End) / math.Sqrt(float64(s.Steps))
}

// factor returns 1/b_{t+1} = Start − α_T·√t, with t held at T−1 past the horizon.
func (s *ADPSqrtDecay) factor(t int) float64 {
	t = min(max(t, 0), max(s.Steps-1, 0))
	return s.Start - s.slope()*math.Sqrt(float64(t))
}

// Rate returns the step size Eta·(Start − α_T·√t) of step t (t < Steps; a later step
// has the rate of step T−1, and Step refuses it).
func (s *ADPSqrtDecay) Rate(t int) float64 { return s.Eta * s.factor(t) }

// NoiseScale returns α_{t+1} = b_{t+1}^{1/2} = (Start − α_T√t)^{−1/2}, or 1 with
// ConstantNoise. Past the horizon it is that of step T−1 (finite and positive; Step
// refuses such a step).
func (s *ADPSqrtDecay) NoiseScale(t int) float64 {
	if s.ConstantNoise {
		return 1
	}
	return 1 / math.Sqrt(s.factor(t))
}

// Step performs θ ← θ − η_t·g.
func (s *ADPSqrtDecay) Step(params, grad []float64) error {
	if err := checkLengths(s.Name(), params, grad, 0); err != nil {
		return err
	}
	if err := s.check(); err != nil {
		return err
	}
	if s.step >= s.Steps {
		return fmt.Errorf("%w: %s: step %d is past the schedule's horizon of %d steps (its step size reaches %v there); the horizon is fixed before training",
			ErrConfig, s.Name(), s.step, s.Steps, s.Eta*s.End)
	}
	r := s.Rate(s.step)
	if !(r > 0) || math.IsInf(r, 0) {
		return fmt.Errorf("%w: %s: step size %v at step %d", ErrConfig, s.Name(), r, s.step)
	}
	descend(params, grad, r)
	s.step++
	return nil
}

// State returns the step; the rule keeps nothing else.
func (s *ADPSqrtDecay) State() State { return State{Step: s.step} }

// SetState restores a state returned by State.
func (s *ADPSqrtDecay) SetState(state State) error {
	r := readRuleState(s.Name(), state, nil, nil)
	if r.err != nil {
		return r.err
	}
	s.step = state.Step
	return nil
}
