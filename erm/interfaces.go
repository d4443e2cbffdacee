package erm

import (
	"math/rand/v2"
)

// Loss is a convex loss l(z, y) of a linear model's margin z = xᵀw and a
// label y. The solvers call it concurrently and never mutate it.
//
// Privacy calibrations rely on Lipschitz and Smoothness being true bounds
// over every z and every label the loss accepts, not over the data at hand.
type Loss interface {
	// Name is a short lower-case identifier ("logistic").
	Name() string
	// Value returns l(z, y).
	Value(z, y float64) float64
	// Deriv returns ∂l/∂z (a subgradient where l is not differentiable).
	Deriv(z, y float64) float64
	// Deriv2 returns ∂²l/∂z² (0 where l is piecewise linear).
	Deriv2(z, y float64) float64
	// Lipschitz bounds |∂l/∂z| over all z and admissible y; +Inf if none.
	Lipschitz() float64
	// Smoothness bounds ∂²l/∂z² over all z and admissible y; +Inf for a
	// non-smooth loss.
	Smoothness() float64
	// Classification reports whether labels must be ±1 (accuracy is the
	// metric) rather than real (mean squared error is the metric).
	Classification() bool
}

// Solver is a (private) ERM method. Solve minimises p and returns the released
// model with the privacy it spends. noise supplies every random choice the
// method makes (noise, sampling, permutations), so a seeded generator
// reproduces a run exactly; Solve must not use any other randomness and must
// not modify p. Each solver documents its calibration and which problems it
// accepts; an ε of +Inf switches the noise off (the non-private reference).
type Solver interface {
	Solve(p *Problem, noise *rand.Rand) (*Result, error)
}
