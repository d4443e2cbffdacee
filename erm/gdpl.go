package erm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"github.com/privtrain/privtrain/internal/privrand"
)

// GDPL is DP-GD of the DP-ERM-revisited paper (Algorithm 4; digest §4.5)
// for objectives satisfying the Polyak–Łojasiewicz condition (here: Lambda >
// 0, which makes F μ-strongly convex and hence PL):
//
//	x_t = x_{t−1} − η (∇F(x_{t−1}) + z_{t−1}),  z ~ N(0, σ² I),  η = 1/L,
//
// returning x_T. σ is the zCDP calibration of T full-gradient releases with
// sensitivity 2G/n (see gaussiancalibration.go).
type GDPL struct {
	Epsilon, Delta float64
	// Iterations is T; 0 means ⌈κ·log(n²ε²/(d G² log(1/δ)))⌉ (Theorem 6.2's
	// T, with the κ = L/μ its Õ hides for η = 1/L). Required with no noise.
	Iterations int
	// StepSize is η; 0 means 1/L.
	StepSize float64
	Start    []float64
}

// Solve runs DP-GD under the PL condition.
func (a *GDPL) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	G, err := gaussianSettings(p, a.Epsilon, a.Delta)
	if err != nil {
		return nil, err
	}
	if p.L1 != 0 || p.Radius != 0 {
		return nil, fmt.Errorf("erm: DP-GD (PL) takes neither an L1 term nor a constraint: %w", ErrUnsupported)
	}
	if _, err := smoothLoss(p, "DP-GD (PL)"); err != nil {
		return nil, err
	}
	n, d := p.Len(), p.Dim()
	L, mu := p.Smoothness(), p.StrongConvexity()
	T := a.Iterations
	if T == 0 {
		if math.IsInf(a.Epsilon, 1) || !(mu > 0) {
			return nil, fmt.Errorf("erm: Iterations must be set when the noise is off or Lambda = 0: %w", ErrInvalid)
		}
		r := float64(n) * float64(n) * a.Epsilon * a.Epsilon / (float64(d) * G * G * math.Log(1/a.Delta))
		T = max(1, int(math.Ceil(L/mu*math.Log(max(r, math.E)))))
	}
	if T < 1 {
		return nil, fmt.Errorf("erm: Iterations = %d: must be ≥ 1: %w", a.Iterations, ErrInvalid)
	}
	eta := a.StepSize
	if eta == 0 {
		eta = 1 / L
	}
	if !(eta > 0) || eta > 1/L*(1+1e-12) {
		return nil, fmt.Errorf("erm: StepSize = %v: must be in (0, 1/L = %g]: %w", a.StepSize, 1/L, ErrInvalid)
	}
	if a.Start != nil && len(a.Start) != d {
		return nil, fmt.Errorf("erm: Start has length %d, want %d: %w", len(a.Start), d, ErrInvalid)
	}
	sigma, achieved, err := zcdpNoise(a.Epsilon, a.Delta, T, n, G)
	if err != nil {
		return nil, err
	}
	x := make([]float64, d)
	if a.Start != nil {
		copy(x, a.Start)
	}
	g := make([]float64, d)
	for range T {
		p.Gradient(g, x)
		privrand.AddGaussian(rng, g, sigma)
		floats.AddScaled(x, -eta, g)
	}
	return &Result{X: x, Epsilon: achieved, Delta: gaussianDelta(a.Epsilon, a.Delta), Iterations: T,
		Calibration: fmt.Sprintf("Gaussian σ = %.4g per coordinate (zCDP, sensitivity 2G/n, G = %g), T = %d, η = %.4g", sigma, G, T, eta)}, nil
}

func gaussianDelta(eps, delta float64) float64 {
	if math.IsInf(eps, 1) {
		return 0
	}
	return delta
}
