package dpoptim

import (
	"fmt"
	"slices"
)

// SGD is stochastic gradient descent, optionally with momentum in the form of PyTorch and
// TensorFlow's MomentumOptimizer: v ← μ·v + g, w ← w − η_t·v. With μ = 0 it is
// w ← w − η_t·g; wrapped in a [Private] step it is DP-SGD (and DP-LSSGD with smoothing).
// For the paper form of momentum, which does not rescale past steps when η_t changes,
// see [HeavyBall].
//
// Zero values: LearningRate is required (nil is rejected at the first Step); Momentum 0
// is plain SGD, a legitimate value and the default.
type SGD struct {
	LearningRate Schedule
	Momentum     float64 // μ in [0, 1); 0: no momentum

	step     int
	velocity []float64
}

// NewSGD returns plain SGD (no momentum) with the given learning-rate schedule; set
// Momentum for momentum SGD.
func NewSGD(lr Schedule) *SGD { return &SGD{LearningRate: lr} }

// Name returns "SGD", or "SGD+momentum" when μ > 0.
func (s *SGD) Name() string {
	if s.Momentum != 0 {
		return "SGD+momentum"
	}
	return "SGD"
}

// Step performs one SGD update.
func (s *SGD) Step(params, grad []float64) error {
	if err := checkLengths(s.Name(), params, grad, len(s.velocity)); err != nil {
		return err
	}
	if err := checkMomentum("SGD momentum", s.Momentum); err != nil {
		return err
	}
	eta, err := rate(s.LearningRate, s.step)
	if err != nil {
		return err
	}
	if s.Momentum == 0 && s.velocity == nil {
		descend(params, grad, eta)
	} else {
		if s.velocity == nil {
			s.velocity = make([]float64, len(params))
		}
		mu := s.Momentum
		v := s.velocity[:len(params)]
		grad = grad[:len(params)]
		for i := range params {
			v[i] = float64(mu*v[i]) + grad[i]
			params[i] -= float64(eta * v[i])
		}
	}
	s.step++
	return nil
}

// descend sets params −= eta·grad.
//
// Each product is rounded before the subtraction (the conversion forbids a fused
// multiply-add, which Go emits on arm64 and never on amd64 by default): the same bits on
// every architecture, and those of HeavyBall and Nesterov with β = 0.
func descend(params, grad []float64, eta float64) {
	grad = grad[:len(params)]
	for i := range params {
		params[i] -= float64(eta * grad[i])
	}
}

// State returns the step and the vector "velocity" (empty until momentum has been used).
func (s *SGD) State() State {
	return State{Step: s.step, Vectors: map[string][]float64{"velocity": slices.Clone(s.velocity)}}
}

// SetState restores a state returned by State.
func (s *SGD) SetState(state State) error {
	v, err := readOneVector(s.Name(), state, "velocity")
	if err != nil {
		return err
	}
	s.step, s.velocity = state.Step, v
	return nil
}

func checkMomentum(name string, mu float64) error {
	if !(mu >= 0 && mu < 1) {
		return fmt.Errorf("%w: %s = %v, want a value in [0, 1)", ErrConfig, name, mu)
	}
	return nil
}
