package erm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/privrand"
)

// GDPL is DP-GD of the DP-ERM-revisited paper (Algorithm 4; digest §4.5)
// for objectives satisfying the Polyak–Łojasiewicz condition (here: Lambda >
// 0, which makes F μ-strongly convex and hence PL):
//
//	x_t = x_{t−1} − η (∇F(x_{t−1}) + z_{t−1}),  z ~ N(0, σ² I),  η = 1/L,
//
// returning x_T, or with RandomIterate (the non-convex case, Theorem 6.3)
// x_k with k drawn uniformly from {0, …, T−1}. σ is the zCDP calibration of
// T full-gradient releases with sensitivity 2G/n (see gaussiancalibration.go).
type GDPL struct {
	Epsilon, Delta float64
	// Iterations is T; 0 means ⌈κ·log(n²ε²/(d G² log(1/δ)))⌉ (Theorem 6.2's
	// T, with the κ = L/μ its Õ hides for η = 1/L), or with RandomIterate
	// Theorem 6.3's ⌈√L·n·ε/(G·√(d log(1/δ)))⌉ (its constant taken as 1).
	// Required with no noise.
	Iterations int
	// RandomIterate releases x_k for k uniform in {0, …, T−1} (drawn from
	// the noise generator before the first step) instead of x_T: the output
	// of Theorem 6.3 for smooth non-convex F, whose guarantee bounds
	// E‖∇F(x_k)‖². The paper prints the index set as {0, …, m−1} (digest
	// §4.5 FLAG); the proof averages over the T iterates x_0, …, x_{T−1}.
	// It needs neither Lambda > 0 nor convexity. Privacy is unchanged: every
	// iterate is a post-processing of the T noisy gradients.
	RandomIterate bool
	// StepSize is η; 0 means 1/L.
	StepSize float64
	Start    []float64
	// PaperConstant, when > 0, draws σ from the paper's eq. (11) with c =
	// PaperConstant instead of the zCDP calibration: the run is NOT DP at
	// Epsilon (see papernoise.go; Result.Epsilon is then the zCDP ε of that σ).
	PaperConstant float64
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
	if err := checkPaperConstant(a.PaperConstant, a.Epsilon); err != nil {
		return nil, err
	}
	n, d := p.Len(), p.Dim()
	L, mu := p.Smoothness(), p.StrongConvexity()
	T := a.Iterations
	if T == 0 && a.RandomIterate {
		if math.IsInf(a.Epsilon, 1) {
			return nil, fmt.Errorf("erm: Iterations must be set when the noise is off: %w", ErrInvalid)
		}
		r := math.Sqrt(L) * float64(n) * a.Epsilon / (G * math.Sqrt(float64(d)*math.Log(1/a.Delta)))
		T = max(1, int(math.Ceil(min(r, 1e9))))
	}
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
	var pc *PaperCalibration
	var sigma, achieved float64
	if a.PaperConstant > 0 { // eq. (11), as printed
		pc = newPaperCalibration("eq. (11)", a.PaperConstant, a.Epsilon, G, float64(T), math.Log(1/a.Delta), n)
		sigma = pc.Sigma
		achieved, err = accountant.ZCDPEpsilon(sigma, a.Delta, T, n, G)
	} else {
		sigma, achieved, err = zcdpNoise(a.Epsilon, a.Delta, T, n, G)
	}
	if err != nil {
		return nil, err
	}
	x := make([]float64, d)
	if a.Start != nil {
		copy(x, a.Start)
	}
	out, k := x, -1
	if a.RandomIterate {
		k = rng.IntN(T) // the released index, uniform in {0, …, T−1}
		out = make([]float64, d)
	}
	g := make([]float64, d)
	for t := range T {
		if t == k {
			copy(out, x) // x_k, before step k+1
		}
		if gdplTrace != nil {
			gdplTrace(t, x)
		}
		p.Gradient(g, x)
		privrand.AddGaussian(rng, g, sigma)
		floats.AddScaled(x, -eta, g)
	}
	note := fmt.Sprintf("Gaussian σ = %.4g per coordinate (zCDP, sensitivity 2G/n, G = %g), T = %d, η = %.4g", sigma, G, T, eta)
	if a.RandomIterate {
		note += ", output x_k for k uniform in {0, …, T−1} (Theorem 6.3)"
	}
	if pc != nil {
		note = paperNote(pc, achieved) + "; " + note
	}
	return &Result{X: out, Epsilon: achieved, Delta: gaussianDelta(a.Epsilon, a.Delta), Iterations: T, Calibration: note, Paper: pc}, nil
}

// gdplTrace, when set (by tests), sees every iterate x_t, t = 0, …, T−1,
// before step t+1.
var gdplTrace func(t int, x []float64)

// gaussianDelta is the δ a solver with Gaussian noise reports: 0 when the noise is off
// (ε = +∞), else the δ it was calibrated for.
func gaussianDelta(eps, delta float64) float64 {
	if math.IsInf(eps, 1) {
		return 0
	}
	return delta
}
