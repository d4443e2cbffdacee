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
