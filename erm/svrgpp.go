package erm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/privtrain/privtrain/accountant"
)

// SVRGPlusPlus is DP-SVRG++, the private SVRG++ of the DP-ERM-revisited
// paper (Algorithm 2; digest §4.3) for convex, not necessarily strongly
// convex, F^r (Lambda = 0 allowed): epoch s runs m_s = 2^s·m inner steps
// (as in SVRG) and starts from the previous epoch's last inner iterate,
// not from the snapshot. All 2^{T+1}m − 2m inner steps are charged to the
// ledger as in DP-SVRG.
type SVRGPlusPlus struct {
	Epsilon, Delta float64
	// Epochs is T; 0 means Theorem 4.4's ⌈log₂(nε/(G√(d log(1/δ))))⌉ (at
	// least 1), required without noise.
	Epochs int
	// InnerSteps is the base m; 0 means 10 (the paper's experiment).
	InnerSteps int
	// BatchSize is b per inner step; 0 means 1.
	BatchSize int
	// StepSize is η; 0 means 1/(13L) (Theorem 4.4).
	StepSize float64
	Start    []float64
	// Sampling is as in SVRG: Poisson (the zero value) or One (exactly b
	// uniform examples per inner step, Algorithm 2), both charged the same ε.
	Sampling          Sampling
	AccountantOptions []accountant.Option
	// PaperConstant, when > 0, draws σ from the paper's eq. (6) with c =
	// PaperConstant, as printed (2^T·m, ln(2/δ)), instead of the proven
	// calibration: the run is NOT DP at Epsilon (see papernoise.go).
	PaperConstant float64
}

// Solve runs DP-SVRG++ and releases x̃_T.
func (a *SVRGPlusPlus) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	c, err := svrgSetup(p, "DP-SVRG++", a.Epsilon, a.Delta, a.BatchSize, a.StepSize, a.Start)
	if err != nil {
		return nil, err
	}
	if err := checkPaperConstant(a.PaperConstant, a.Epsilon); err != nil {
		return nil, err
	}
	if c.eta == 0 {
		c.eta = 1 / (13 * c.L)
	}
	m := a.InnerSteps
	if m == 0 {
		m = 10
	}
	if m < 1 {
		return nil, fmt.Errorf("erm: InnerSteps = %d: must be ≥ 1: %w", a.InnerSteps, ErrInvalid)
	}
	T := a.Epochs
	if T == 0 {
		if math.IsInf(a.Epsilon, 1) {
			return nil, fmt.Errorf("erm: Epochs must be set when the noise is off: %w", ErrInvalid)
		}
		r := float64(c.n) * a.Epsilon / (c.G * math.Sqrt(float64(c.d)*math.Log(1/a.Delta)))
		T = max(1, int(math.Ceil(math.Log2(r))))
	}
	if T < 1 || T > 40 {
		return nil, fmt.Errorf("erm: Epochs = %d: must be in [1, 40] (epoch s runs 2^s·m steps): %w", T, ErrInvalid)
	}
	steps := m * ((1 << (T + 1)) - 2) // Σ_{s=1..T} 2^s m
	var pc *PaperCalibration
	if a.PaperConstant > 0 { // eq. (6), as printed
		pc = newPaperCalibration("eq. (6)", a.PaperConstant, a.Epsilon, c.G, math.Ldexp(float64(m), T), math.Log(2/a.Delta), c.n)
	}
	sigma, achieved, split, err := svrgSigma(pc, a.Epsilon, a.Delta, steps, c.n, c.batch, c.G, a.AccountantOptions)
	if err != nil {
		return nil, err
	}
	r := newSVRGRunner(p, c, sigma, a.Sampling)
	if a.Start != nil {
		copy(r.snapshot, a.Start)
		copy(r.x, a.Start)
	}
	for s := 1; s <= T; s++ {
		r.epoch(rng, m<<s) // r.x carries over: x_0^{s+1} = x_{m_s}^s
	}
	note := fmt.Sprintf("Gaussian σ = %.4g per coordinate in each of %d inner steps (epochs of 2^s·%d, s ≤ %d; RDP sampled q = %d/%d plus full-gradient part, variance split %.3g), η = %.4g, %s",
		sigma, steps, m, T, c.batch, c.n, split, c.eta, svrgSamplingNote(a.Sampling, c.batch))
	if pc != nil {
		note = paperNote(pc, achieved) + "; " + note
	}
	return &Result{X: r.snapshot, Epsilon: achieved, Delta: gaussianDelta(a.Epsilon, a.Delta), Iterations: steps,
		Calibration: note, Paper: pc}, nil
}
