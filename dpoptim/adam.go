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

// State returns "step" and the moment estimates "m" and "v".
func (a *Adam) State() map[string][]float64 {
	return map[string][]float64{
		"step": scalarState(float64(a.step)),
		"m":    slices.Clone(a.m),
		"v":    slices.Clone(a.v),
	}
}

// SetState restores a state returned by State.
func (a *Adam) SetState(state map[string][]float64) error {
	r := newStateReader("Adam", state, "step", "m", "v")
	step := r.count("step")
	d := 0
	m := r.vector("m", &d)
	v := r.vector("v", &d)
	if r.err == nil && (m == nil) != (v == nil) {
		r.fail("moments \"m\" and \"v\" must both be empty or both be set")
	}
	if r.err != nil {
		return r.err
	}
	a.step, a.m, a.v = step, m, v
	return nil
}
