package erm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
)

// LaplaceSettings are the parameters shared by the pure ε-DP methods of the
// DP accelerated methods paper (Kuru et al.): DP-GD, DP-SHB, DP-NAG(-opt)
// and DP-MASG(-opt). They run on an L-smooth, μ-strongly convex objective
// (logistic loss with Lambda > 0), add iid Laplace noise to a mini-batch
// gradient each iteration and release every iterate, spending ε in total by
// basic composition.
type LaplaceSettings struct {
	// Epsilon > 0 is the total pure-DP budget; +Inf turns the noise off.
	Epsilon float64
	// Iterations is T ≥ 1 (the -opt variants may run fewer, Remark 4.1).
	Iterations int
	// BatchSize is m, drawn without replacement each iteration; 0 means n
	// (full gradient, no amplification).
	BatchSize int
	// StepMult is c in the step size α = c/L; 0 means 1. The paper's
	// experiments use c ∈ {0.1, 1}.
	StepMult float64
	// Smoothness and StrongConvexity override L and μ when positive; by
	// default L = Problem.Smoothness() (data-independent) and μ = Lambda.
	Smoothness, StrongConvexity float64
	// Sensitivity overrides the L1 sensitivity S1 of one example's gradient
	// when positive; by default S1 = Problem.L1Sensitivity().
	Sensitivity float64
	// Start is x_0; nil means the origin.
	Start []float64
}

// nagSchedule gives iteration t's (0-based) step size, momentum, Laplace
// scale, and whether it starts a new stage (momentum memory reset).
type nagSchedule struct {
	alpha, beta, b []float64
	reset          []bool
}

// runNAG runs the DP Nesterov iteration (eq. 27 of the DP accelerated methods
// paper) with per-iteration parameters:
//
//	z_t = (1 + β_t) x_t − β_t x_{t−1},  x_{t+1} = z_t − α_t (∇F_B(z_t) + η_t),
//
// η_t iid Laplace(b_t), B a fresh batch of m examples (all n when m = n).
// β = 0 gives DP-GD.
func runNAG(p *Problem, rng *rand.Rand, start []float64, m int, s nagSchedule) []float64 {
	d, n := p.Dim(), p.Len()
	x := make([]float64, d)
	if start != nil {
		copy(x, start)
	}
	prev := append([]float64(nil), x...)
	z := make([]float64, d)
	g := make([]float64, d)
	var smp *sampler
	if m < n {
		smp = newSampler(n)
	}
	for t := range s.alpha {
		if s.reset[t] {
			copy(prev, x)
		}
		beta := s.beta[t]
		for j := range z {
			z[j] = (1+beta)*x[j] - beta*prev[j]
		}
		if smp == nil {
			p.Gradient(g, z)
		} else {
			p.batchGradient(g, z, smp.sample(rng, m))
		}
		addLaplace(rng, g, s.b[t])
		copy(prev, x)
		copy(x, z)
		floats.AddScaled(x, -s.alpha[t], g)
	}
	return x
}

// laplaceResult totals the pure-DP loss of the scales actually used.
func laplaceResult(x []float64, s1 float64, b []float64, n, m int, what string) *Result {
	eps := 0.0
	for _, bt := range b {
		eps += PerStepEpsilon(s1, bt, n, m)
	}
	return &Result{X: x, Epsilon: eps, Delta: 0, Iterations: len(b), Calibration: what}
}

func (s *LaplaceSettings) stepMult() float64 {
	if s.StepMult == 0 {
		return 1
	}
	return s.StepMult
}

func (s *LaplaceSettings) checkStart(d int) error {
	if s.Start != nil && len(s.Start) != d {
		return fmt.Errorf("erm: Start has length %d, want d = %d: %w", len(s.Start), d, ErrInvalid)
	}
	if s.StepMult < 0 || math.IsNaN(s.StepMult) {
		return fmt.Errorf("erm: StepMult = %v: must be > 0: %w", s.StepMult, ErrInvalid)
	}
	return nil
}

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
	n, m, s1, err := laplaceSettings(p, a.Epsilon, a.Iterations, a.BatchSize, a.Sensitivity)
	if err != nil {
		return nil, err
	}
	if err := a.checkStart(p.Dim()); err != nil {
		return nil, err
	}
	L, mu, err := stepConstants(p, a.Smoothness, a.StrongConvexity)
	if err != nil {
		return nil, err
	}
	alpha := a.stepMult() / L
	beta := (1 - math.Sqrt(alpha*mu)) / (1 + math.Sqrt(alpha*mu))
	T := a.Iterations
	alphas := constant(alpha, T)
	if a.Optimal && !a.KeepIterations && !math.IsInf(a.Epsilon, 1) {
		T = selectIterations(mu, L, alphas, constantInt(1, T), a.initialGap(), p.Dim(), s1, n, a.Epsilon)
	}
	sched := nagSchedule{alpha: alphas[:T], beta: constant(beta, T), reset: make([]bool, T)}
	var what string
	if a.Optimal {
		_, w := NAGWeights(mu, L, alpha, T)
		sched.b = splitScales(w, a.Epsilon, s1, n, m)
		what = fmt.Sprintf("Laplace b_t from %.4g down to %.4g (Prop. 4.2 split), T = %d of %d, α = %.4g, β = %.4g", sched.b[0], sched.b[T-1], T, a.Iterations, alpha, beta)
	} else {
		b, _ := UniformLaplaceScale(s1, a.Epsilon, T, n, m)
		sched.b = constant(b, T)
		what = fmt.Sprintf("Laplace b = %.4g uniform over T = %d, α = %.4g, β = %.4g", b, T, alpha, beta)
	}
	x := runNAG(p, rng, a.Start, m, sched)
	return laplaceResult(x, s1, sched.b, n, m, what), nil
}

func (a *NAG) initialGap() float64 {
	if a.InitialGap > 0 {
		return a.InitialGap
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
