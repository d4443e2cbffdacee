package erm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"github.com/privtrain/privtrain/internal/privrand"
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
	// Trace, when set, sees every iterate: x_0 before the first step
	// (t = 0) and x_t after step t, t = 1, …, T (T the iterations actually
	// run, Result.Iterations), the last being Result.X. x is only valid
	// during the call and must not be modified. Every iterate is released
	// (the DP guarantee covers them all), so reading them is
	// post-processing; Trace does not change the run.
	Trace func(t int, x []float64)
}

// laplaceRun holds what the pure ε-DP methods derive from their settings
// and the problem.
type laplaceRun struct {
	n, m  int     // examples, and examples per batch
	s1    float64 // L1 sensitivity of one example's gradient
	L, mu float64 // smoothness and strong convexity
	alpha float64 // step size c/L
}

// setup validates s against p (see laplaceSettings and stepConstants) and
// derives the run's constants.
func (s *LaplaceSettings) setup(p *Problem) (laplaceRun, error) {
	var r laplaceRun
	var err error
	if r.n, r.m, r.s1, err = laplaceSettings(p, s.Epsilon, s.Iterations, s.BatchSize, s.Sensitivity); err != nil {
		return r, err
	}
	if s.Start != nil && len(s.Start) != p.Dim() {
		return r, fmt.Errorf("erm: Start has length %d, want d = %d: %w", len(s.Start), p.Dim(), ErrInvalid)
	}
	if s.StepMult < 0 || math.IsNaN(s.StepMult) {
		return r, fmt.Errorf("erm: StepMult = %v: must be > 0: %w", s.StepMult, ErrInvalid)
	}
	if r.L, r.mu, err = stepConstants(p, s.Smoothness, s.StrongConvexity); err != nil {
		return r, err
	}
	r.alpha = s.stepMult() / r.L
	return r, nil
}

func (s *LaplaceSettings) stepMult() float64 {
	if s.StepMult == 0 {
		return 1
	}
	return s.StepMult
}

// nesterovMomentum returns β = (1 − √(αμ))/(1 + √(αμ)), NAG's momentum for
// step size α (Theorem 4.1).
func nesterovMomentum(alpha, mu float64) float64 {
	return (1 - math.Sqrt(alpha*mu)) / (1 + math.Sqrt(alpha*mu))
}

// momentumSchedule gives iteration t's (0-based) step size, momentum,
// Laplace scale, and whether it starts a new stage (momentum memory reset).
// heavyBall takes each gradient at x_t instead of the extrapolated z_t.
type momentumSchedule struct {
	alpha, beta, b []float64
	reset          []bool
	heavyBall      bool
}

// runMomentum runs the DP momentum iteration of the DP accelerated methods
// paper with per-iteration parameters:
//
//	z_t = (1 + β_t) x_t − β_t x_{t−1},  x_{t+1} = z_t − α_t (∇F_B(y_t) + η_t),
//
// y_t = z_t for Nesterov's method (eq. 27; β = 0 gives DP-GD) and y_t = x_t
// for Polyak's heavy ball (eq. 9), x_{−1} = x_0, η_t iid Laplace(b_t), B a
// fresh batch of m examples (all n when m = n). It starts at ls.Start and
// shows each iterate to ls.Trace.
func runMomentum(p *Problem, rng *rand.Rand, ls *LaplaceSettings, m int, s momentumSchedule) []float64 {
	d, n := p.Dim(), p.Len()
	x := make([]float64, d)
	if ls.Start != nil {
		copy(x, ls.Start)
	}
	if ls.Trace != nil {
		ls.Trace(0, x)
	}
	prev := append([]float64(nil), x...)
	z := make([]float64, d)
	g := make([]float64, d)
	var smp *sampler
	if m < n {
		smp = newSampler(n)
	}
	y := z
	if s.heavyBall {
		y = x
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
			p.Gradient(g, y)
		} else {
			p.batchGradient(g, y, smp.sample(rng, m))
		}
		privrand.AddLaplace(rng, g, s.b[t])
		copy(prev, x)
		copy(x, z)
		floats.AddScaled(x, -s.alpha[t], g)
		if ls.Trace != nil {
			ls.Trace(t+1, x)
		}
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
