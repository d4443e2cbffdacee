package erm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"github.com/privtrain/privtrain/internal/privrand"
)

// AccMD is DP-AccMD, the accelerated mirror descent of the DP-ERM-revisited
// paper (Algorithm 3; digest §4.4), over the L2 ball C = {‖x‖₂ ≤ R}
// (R = Problem.Radius) with the mirror map w(z) = ‖z‖²_C/2 = ‖z‖²/(2R²).
// Then ‖C‖₂ = 2R, the smoothness in ‖·‖_C is L' = L‖C‖₂² = 4LR² (Lemma 5.1;
// the paper's α_{k+1} assumes ‖C‖₂ = 1), and both argmins are projections:
//
//	x_{k+1} = r_k z_k + (1 − r_k) y_k,         r_k = 2/(k+2)
//	g       = ∇F(x_{k+1}) + b_{k+1},           b ~ N(0, σ² I)
//	y_{k+1} = Proj_C(x_{k+1} − g/(4L))
//	z_{k+1} = Proj_C(z_k − (k+2) g/(16L))      (α_{k+1} R² with α_{k+1} = (k+2)/(4L'))
//
// The paper's y-step uses the exact gradient and only the z-step the noisy
// one, yet y_T is released; its privacy proof treats each iteration as ONE
// Gaussian release of the full gradient, so, following the digest's safe
// reading, one noisy gradient per iteration is used in both steps. σ is the
// zCDP calibration of T releases with sensitivity 2G/n.
type AccMD struct {
	Epsilon, Delta float64
	// Iterations is T ≥ 1 (Theorem 5.4's T depends on unknown constants).
	Iterations int
	// L1Radius > 0 runs on the L1 ball {‖x‖₁ ≤ L1Radius} instead of
	// Problem.Radius's L2 ball (the Problem then has Radius 0), with the
	// p-norm mirror map: see accmd_l1.go. Zero keeps the L2 ball.
	L1Radius float64
}

// Solve runs DP-AccMD and releases y_T. The two balls share the iteration and
// the noise; they differ only in the y-step's projection and the z-step
// (accmdBall).
func (a *AccMD) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	G, err := gaussianSettings(p, a.Epsilon, a.Delta)
	if err != nil {
		return nil, err
	}
	l1 := a.L1Radius != 0
	switch {
	case l1 && (!(a.L1Radius > 0) || math.IsInf(a.L1Radius, 1)):
		return nil, fmt.Errorf("erm: DP-AccMD L1Radius = %v: must be a finite number > 0: %w", a.L1Radius, ErrInvalid)
	case l1 && (p.Radius != 0 || p.L1 != 0):
		return nil, fmt.Errorf("erm: DP-AccMD on the L1 ball takes no L2-ball Radius and no L1 term: %w", ErrUnsupported)
	case !l1 && (!(p.Radius > 0) || p.L1 != 0):
		return nil, fmt.Errorf("erm: DP-AccMD needs an L2-ball constraint (Radius > 0) and no L1 term: %w", ErrUnsupported)
	}
	if _, err := smoothLoss(p, "DP-AccMD"); err != nil {
		return nil, err
	}
	if a.Iterations < 1 {
		return nil, fmt.Errorf("erm: Iterations = %d: must be ≥ 1: %w", a.Iterations, ErrInvalid)
	}
	n, d, T := p.Len(), p.Dim(), a.Iterations
	L := p.Smoothness()
	sigma, achieved, err := zcdpNoise(a.Epsilon, a.Delta, T, n, G)
	if err != nil {
		return nil, err
	}
	var ball accmdBall = l2Ball{radius: p.Radius, L: L}
	if l1 {
		ball = newL1Ball(d, a.L1Radius, L)
	}
	x := make([]float64, d)
	y := make([]float64, d)
	z := make([]float64, d)
	g := make([]float64, d)
	for k := range T {
		r := 2 / float64(k+2)
		for j := range x {
			x[j] = r*z[j] + (1-r)*y[j]
		}
		p.Gradient(g, x)
		privrand.AddGaussian(rng, g, sigma)
		floats.AddScaledTo(y, x, -1/(4*L), g)
		ball.project(y)
		ball.zStep(z, g, k)
	}
	return &Result{X: y, Epsilon: achieved, Delta: gaussianDelta(a.Epsilon, a.Delta), Iterations: T,
		Calibration: fmt.Sprintf("Gaussian σ = %.4g per coordinate (zCDP, sensitivity 2G/n, G = %g), T = %d, one noisy gradient per iteration in both steps", sigma, G, T) + ball.describe()}, nil
}

// accmdBall is what DP-AccMD's constraint set decides: the Euclidean projection
// of the y-step, the mirror step of the z-step, and its part of the report.
type accmdBall interface {
	project(y []float64)
	zStep(z, g []float64, k int)
	describe() string
}

// l2Ball is the L2 ball ‖x‖₂ ≤ radius with w(z) = ‖z‖²/(2R²): both argmins
// are projections, z_{k+1} = Proj_C(z_k − (k+2) g/(16L)).
type l2Ball struct{ radius, L float64 }

func (b l2Ball) project(y []float64) { projectBall(y, b.radius) }

func (b l2Ball) zStep(z, g []float64, k int) {
	floats.AddScaled(z, -float64(k+2)/(16*b.L), g)
	projectBall(z, b.radius)
}

func (l2Ball) describe() string { return "" }
