package erm

import (
	"fmt"
	"math/rand/v2"
)

// GD is the DP-GD baseline of the DP accelerated methods paper (digest §2.6):
// x_{t+1} = x_t − (c/L)(∇F_B(x_t) + η_t), η_t iid Laplace(b) with the uniform
// split of Proposition 3.1. It is DP-NAG with β = 0, and mini-batch DP-SGD
// when BatchSize < n.
type GD struct {
	LaplaceSettings
}

// Solve runs DP-GD.
func (a *GD) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	n, m, s1, err := laplaceSettings(p, a.Epsilon, a.Iterations, a.BatchSize, a.Sensitivity)
	if err != nil {
		return nil, err
	}
	if err := a.checkStart(p.Dim()); err != nil {
		return nil, err
	}
	L, _, err := stepConstants(p, a.Smoothness, a.StrongConvexity)
	if err != nil {
		return nil, err
	}
	T := a.Iterations
	alpha := a.stepMult() / L
	b, _ := UniformLaplaceScale(s1, a.Epsilon, T, n, m)
	sched := nagSchedule{alpha: constant(alpha, T), beta: make([]float64, T), b: constant(b, T), reset: make([]bool, T)}
	x := runNAG(p, rng, a.Start, m, sched)
	return laplaceResult(x, s1, sched.b, n, m, fmt.Sprintf("Laplace b = %.4g uniform over T = %d, α = %.4g", b, T, alpha)), nil
}
