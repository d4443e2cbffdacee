package erm

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// NAG is DP-NAG, Nesterov's accelerated gradient with Laplace noise (eq. 27
// of the DP accelerated methods paper), step α = c/L and momentum
// β = (1 − √(αμ))/(1 + √(αμ)) (Theorem 4.1).
//
// With Optimal false the budget is split evenly (Proposition 3.1). With
// Optimal true it is DP-NAG-opt: the budget is split by Proposition 4.2,
// ε_t ∝ a_{T,t}^{1/3}, and, unless KeepIterations, T is first re-selected
// as the T' ≤ Iterations minimising the bound (32) with the guess E_0 =
// InitialGap (Remark 4.1). With subsampling (m < n) the same ε_t are used
// and inverted exactly into b_t (Remark 4.2, as the authors' code does).
type NAG struct {
	LaplaceSettings
	Optimal        bool
	KeepIterations bool
	// InitialGap is the guess E_0 of F(x_0) − F* for the re-selection of T;
	// 0 means 10, the paper's value. It is a guess, not read from the data.
	InitialGap float64
}

// Solve runs DP-NAG or DP-NAG-opt.
func (a *NAG) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	r, err := a.setup(p)
	if err != nil {
		return nil, err
	}
	beta := nesterovMomentum(r.alpha, r.mu)
	T := a.Iterations
	alphas := constant(r.alpha, T)
	if a.Optimal && !a.KeepIterations && !math.IsInf(a.Epsilon, 1) {
		T = selectIterations(r.mu, r.L, alphas, constantInt(1, T), initialGap(a.InitialGap), p.Dim(), r.s1, r.n, a.Epsilon)
	}
	sched := momentumSchedule{alpha: alphas[:T], beta: constant(beta, T), reset: make([]bool, T)}
	var what string
	if a.Optimal {
		_, w := NAGWeights(r.mu, r.L, r.alpha, T)
		sched.b = splitScales(w, a.Epsilon, r.s1, r.n, r.m)
		what = fmt.Sprintf("Laplace b_t from %.4g down to %.4g (Prop. 4.2 split), T = %d of %d, α = %.4g, β = %.4g", sched.b[0], sched.b[T-1], T, a.Iterations, r.alpha, beta)
	} else {
		b, _ := UniformLaplaceScale(r.s1, a.Epsilon, T, r.n, r.m)
		sched.b = constant(b, T)
		what = fmt.Sprintf("Laplace b = %.4g uniform over T = %d, α = %.4g, β = %.4g", b, T, r.alpha, beta)
	}
	x := runMomentum(p, rng, &a.LaplaceSettings, r.m, sched)
	return laplaceResult(x, r.s1, sched.b, r.n, r.m, what), nil
}

// initialGap returns the guess E_0 of F(x_0) − F* for the re-selection of T
// (Remark 4.1): guess when positive, else 10, the paper's value.
func initialGap(guess float64) float64 {
	if guess > 0 {
		return guess
	}
	return 10
}

// splitScales turns the Proposition 4.2 budgets into Laplace scales.
func splitScales(w []float64, eps, s1 float64, n, m int) []float64 {
	epsT := OptimalSplit(w, eps)
	b := make([]float64, len(w))
	for t, e := range epsT {
		b[t] = LaplaceScale(s1, e, n, m)
	}
	return b
}

func constant(v float64, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func constantInt(v, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}
