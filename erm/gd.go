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
	r, err := a.setup(p)
	if err != nil {
		return nil, err
	}
	T := a.Iterations
	b, _ := UniformLaplaceScale(r.s1, a.Epsilon, T, r.n, r.m)
	sched := momentumSchedule{alpha: constant(r.alpha, T), beta: make([]float64, T), b: constant(b, T), reset: make([]bool, T)}
	x := runMomentum(p, rng, &a.LaplaceSettings, r.m, sched)
	return laplaceResult(x, r.s1, sched.b, r.n, r.m, fmt.Sprintf("Laplace b = %.4g uniform over T = %d, α = %.4g", b, T, r.alpha)), nil
}
