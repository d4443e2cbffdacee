package dpoptim

import (
	"fmt"
	"math"
	"slices"
)

// Adam is the Adam optimizer (Kingma and Ba) in TensorFlow 1's formulation, which is what
// the DP-LSSGD paper's DP-Adam (TF Privacy's DPAdamGaussianOptimizer) runs:
//
//	m ← β₁m + (1−β₁)g,  v ← β₂v + (1−β₂)g²,
//	w ← w − η_t·√(1−β₂ᵗ)/(1−β₁ᵗ) · m/(√v + ε)
//
// with t counted from 1. (ε enters after the bias correction, i.e. it is Kingma and Ba's
// ε̂.) Wrapped in a [Private] step it is DP-Adam, and DP-LSAdam with smoothing.
//
// Zero values: [NewAdam] sets the usual defaults β₁ = 0.9, β₂ = 0.999, ε = 1e-8 (those of
// PyTorch and Kingma and Ba). In a literal, LearningRate, Beta2 and Epsilon are required:
// a nil schedule, β₂ = 0 or ε = 0 is rejected at the first Step with ErrConfig, so that
// &Adam{LearningRate: lr} cannot silently run with β₁ = β₂ = 0. β₁ = 0 (no averaging of
// the first moment, RMSProp-like) is a legitimate value.
type Adam struct {
	LearningRate          Schedule
	Beta1, Beta2, Epsilon float64

	step int
	m, v []float64
}

// NewAdam returns Adam with β₁ = 0.9, β₂ = 0.999, ε = 1e-8.
func NewAdam(lr Schedule) *Adam {
	return &Adam{LearningRate: lr, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8}
}

// Name returns "Adam".
func (a *Adam) Name() string { return "Adam" }

// Step performs one Adam update.
func (a *Adam) Step(params, grad []float64) error {
	if err := checkLengths("Adam", params, grad, len(a.m)); err != nil {
		return err
	}
	if err := checkMomentum("Adam β₁", a.Beta1); err != nil {
		return err
	}
	if err := checkMomentum("Adam β₂", a.Beta2); err != nil {
		return err
	}
	if a.Beta2 == 0 {
		return fmt.Errorf("%w: Adam β₂ = 0: set Beta2 and Epsilon (NewAdam sets β₁ = 0.9, β₂ = 0.999, ε = 1e-8)", ErrConfig)
	}
	if !(a.Epsilon > 0) || math.IsInf(a.Epsilon, 0) {
		return fmt.Errorf("%w: Adam ε = %v, want a finite ε > 0", ErrConfig, a.Epsilon)
	}
	eta, err := rate(a.LearningRate, a.step)
	if err != nil {
		return err
	}
	if a.m == nil {
		a.m = make([]float64, len(params))
		a.v = make([]float64, len(params))
	}
	t := float64(a.step + 1)
	lr := eta * math.Sqrt(1-math.Pow(a.Beta2, t)) / (1 - math.Pow(a.Beta1, t))
	b1, b2, eps := a.Beta1, a.Beta2, a.Epsilon
	m, v := a.m[:len(params)], a.v[:len(params)]
	grad = grad[:len(params)]
	for i, g := range grad {
		m[i] = b1*m[i] + (1-b1)*g
		v[i] = b2*v[i] + (1-b2)*g*g
		params[i] -= lr * m[i] / (math.Sqrt(v[i]) + eps)
	}
	a.step++
	return nil
}

// State returns the step and the moment estimates, vectors "m" and "v".
func (a *Adam) State() State {
	return State{Step: a.step, Vectors: map[string][]float64{"m": slices.Clone(a.m), "v": slices.Clone(a.v)}}
}

// SetState restores a state returned by State.
func (a *Adam) SetState(state State) error {
	r := readRuleState("Adam", state, []string{"m", "v"}, nil)
	m := r.vector("m")
	v := r.vector("v")
	if r.err == nil && (m == nil) != (v == nil) {
		r.fail("moments \"m\" and \"v\" must both be empty or both be set")
	}
	if r.err != nil {
		return r.err
	}
	a.step, a.m, a.v = state.Step, m, v
	return nil
}
