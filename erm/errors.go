package erm

import "errors"

// Sentinel errors; every error returned by this package wraps one of them.
var (
	// ErrInvalid reports a parameter outside its domain: ε ≤ 0, δ ∉ (0,1),
	// a batch size above n, a negative regulariser, NaN, labels that are not
	// ±1 for a classification loss.
	ErrInvalid = errors.New("invalid parameter")

	// ErrUnsupported reports a solver/problem combination the solver's paper
	// does not cover: a non-smooth loss for an accelerated method, an L1
	// term for a method without a prox step, a loss without a Lipschitz bound
	// for a gradient-perturbation method.
	ErrUnsupported = errors.New("unsupported combination")

	// ErrNoBound reports data without declared row-norm bounds, from which no
	// data-independent sensitivity can be derived (see data.Dataset.Normalize).
	ErrNoBound = errors.New("no declared norm bound")

	// ErrNoConvergence reports a reference optimum whose certificate (gradient
	// bound or duality gap) did not reach the tolerance; the Optimum returned
	// with it holds the best point found and its certified gap.
	ErrNoConvergence = errors.New("optimum not certified")
)
