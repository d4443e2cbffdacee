package erm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/privrand"
)

// PrimalSCD is primalDP-SCD (Algorithm 2, Appendix B of the DP-SCD paper;
// digest §5.3): coordinate descent on the primal θ ∈ R^d with the margins
// v = Xθ ∈ R^N kept alongside. Each round picks L of the d coordinates,
// computes each step independently from the same (θ, v), clips it to
// |ζ_j| ≤ C, and adds N(0, 4C²L(L+1)σ²) noise to the touched θ_j and to all
// N margins. An example can change all L steps, so the sensitivity is
// 2C√(L(L+1)) (Lemma 4, which needs every FEATURE column of unit norm: see
// data.Dataset.NormalizeFeatures) and there is no amplification by
// sampling: σ is calibrated with q = 1 over T = Epochs·d/L rounds.
//
// The paper does not define the primal subproblem G_j (digest §5.3). Here
// step j minimises (1/(NL)) Σ_i l(v_i + L ζ x_ij) + (λ/2)(θ_j + ζ)², which
// for L = 1 is exact coordinate minimisation of P and for L > 1 is the
// separable upper bound (by convexity) that makes L independent steps a
// descent step together, the primal analogue of σ' = L in (8). For the
// squared loss it is ζ = ((y − v)ᵀX_j − λNθ_j)/(L‖X_j‖² + λN), the authors'
// update when L = 1; other smooth losses use damped Newton. The hinge loss
// is rejected: coordinate descent on its non-smooth primal stalls.
type PrimalSCD struct {
	Epsilon, Delta float64
	// Epochs counts passes over the d coordinates; 0 means 10.
	Epochs int
	// BatchSize is L ≤ d coordinates per round; 0 means min(100, d).
	BatchSize         int
	Clip              float64
	AccountantOptions []accountant.Option
}

// Solve runs primalDP-SCD and releases θ.
func (a *PrimalSCD) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	n, d := p.Len(), p.Dim()
	c, err := checkPrimalSCD(p, a, d)
	if err != nil {
		return nil, err
	}
	sigma, achieved, err := scdNoise(1, c.rounds, a.Epsilon, a.Delta, a.AccountantOptions)
	if err != nil {
		return nil, err
	}
	L := float64(c.batch)
	std := 2 * c.clip * math.Sqrt(L*(L+1)) * sigma // Lemma 4
	var xt mat.Dense
	xt.CloneFrom(p.Data.X.T()) // d×n: feature columns as contiguous rows
	theta := make([]float64, d)
	v := make([]float64, n)
	dv := make([]float64, n)
	zetas := make([]float64, c.batch)
	bt := newBatcher(d)
	for range c.rounds {
		batch := bt.next(rng, c.batch)
		for k, j := range batch {
			zetas[k] = clipStep(primalStep(p, xt.RawRowView(j), v, theta[j], L), c.clip)
		}
		for i := range dv {
			dv[i] = 0
		}
		for k, j := range batch {
			theta[j] += zetas[k]
			floats.AddScaled(dv, zetas[k], xt.RawRowView(j))
		}
		floats.Add(v, dv)
		if std > 0 {
			privrand.AddGaussianAt(rng, theta, batch, std)
			privrand.AddGaussian(rng, v, std)
		}
	}
	return &Result{
		X:          theta,
		Epsilon:    achieved,
		Delta:      gaussianDelta(a.Epsilon, a.Delta),
		Iterations: c.rounds,
		Calibration: fmt.Sprintf("Gaussian std 2C√(L(L+1))·σ = %.4g (σ = %.4g, C = %g, L = %d) on θ_B and v, q = 1, T = %d rounds",
			std, sigma, c.clip, c.batch, c.rounds),
	}, nil
}

func checkPrimalSCD(p *Problem, a *PrimalSCD, d int) (scdConfig, error) {
	if err := checkSCDProblem(p, a.Epsilon, a.Delta); err != nil {
		return scdConfig{}, err
	}
	if math.IsInf(p.Loss.Smoothness(), 1) {
		// Exact coordinate minimisation of a non-smooth, non-separable
		// objective can stall away from the optimum (with the hinge loss it
		// stops at a relative gap of ~2e-5 however long it runs); the dual
		// SCD handles the hinge loss.
		return scdConfig{}, fmt.Errorf("erm: primalDP-SCD needs a smooth loss (coordinate descent stalls on the %s primal); use the dual DP-SCD: %w", p.Loss.Name(), ErrUnsupported)
	}
	if !math.IsInf(a.Epsilon, 1) {
		for j := range d {
			if nrm := floats.Norm(mat.Col(nil, j, p.Data.X), 2); nrm > 1+1e-9 {
				return scdConfig{}, fmt.Errorf("erm: primalDP-SCD needs feature columns of norm ≤ 1 (Lemma 4), feature %d has %g (see data.Dataset.NormalizeFeatures): %w", j, nrm, ErrInvalid)
			}
		}
	}
	return scdCounts(a.Epsilon, a.Epochs, a.BatchSize, a.Clip, d)
}

// primalStep returns the minimiser over ζ of
// h(ζ) = (1/(NL)) Σ_i l(v_i + Lζ c_i, y_i) + (λ/2)(θ_j + ζ)², c = X_j, by
// damped Newton on this strictly convex function of one variable.
func primalStep(p *Problem, col, v []float64, thetaJ, L float64) float64 {
	n := float64(len(v))
	lam := p.Lambda
	y := p.Data.Y
	// Smooth loss: safeguarded Newton on the strictly convex h.
	var z float64
	h := func(z float64) (val, d1, d2 float64) {
		for i, ci := range col {
			if ci == 0 {
				continue
			}
			m := v[i] + L*z*ci
			val += p.Loss.Value(m, y[i])
			d1 += p.Loss.Deriv(m, y[i]) * ci
			d2 += p.Loss.Deriv2(m, y[i]) * ci * ci
		}
		val = val/(n*L) + 0.5*lam*(thetaJ+z)*(thetaJ+z)
		return val, d1/n + lam*(thetaJ+z), L*d2/n + lam
	}
	f, g, hh := h(z)
	for range 100 {
		step := -g / hh
		t := 1.0
		for range 60 { // backtracking keeps h decreasing (Armijo)
			if fn, _, _ := h(z + t*step); fn <= f+1e-4*t*g*step {
				break
			}
			t /= 2
		}
		z += t * step
		fNew, gNew, hNew := h(z)
		if math.Abs(t*step) <= 1e-15*(1+math.Abs(z)) || fNew >= f && math.Abs(gNew) <= 1e-15 {
			break
		}
		f, g, hh = fNew, gNew, hNew
	}
	return z
}
