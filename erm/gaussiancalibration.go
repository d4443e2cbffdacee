package erm

import (
	"fmt"
	"math"

	"github.com/privtrain/privtrain/accountant"
)

// Privacy calibrations of the DP-ERM-revisited paper (Wang, Ye, Xu; digest
// §4.6). Its theorems state σ² = c G² T log(1/δ)/(n² ε²) with unspecified
// constants, so the noise here comes from explicit accountants instead:
//
//   - full-batch methods (DP-GD, DP-AccMD): the gradient of the average of n
//     G-Lipschitz losses moves by at most 2G/n when one example is replaced,
//     and T Gaussian releases of std σ are ρ-zCDP with ρ = 2TG²/(n²σ²),
//     hence (ρ + 2√(ρ log(1/δ)), δ)-DP; accountant.GaussianZCDPSigma inverts
//     that (digest §4.6's recommended calibration).
//   - the SVRG family: see svrgNoise.

// zcdpNoise returns σ for T full-gradient releases, 0 for ε = +Inf.
func zcdpNoise(eps, delta float64, T, n int, G float64) (sigma, achieved float64, err error) {
	if math.IsInf(eps, 1) {
		return 0, math.Inf(1), nil
	}
	sigma, err = accountant.GaussianZCDPSigma(eps, delta, T, n, G)
	if err != nil {
		return 0, 0, fmt.Errorf("erm: zCDP calibration: %w", err)
	}
	achieved, err = accountant.ZCDPEpsilon(sigma, delta, T, n, G)
	if err != nil {
		return 0, 0, fmt.Errorf("erm: zCDP calibration: %w", err)
	}
	return sigma, achieved, nil
}

// svrgSplits are the candidate fractions f of the noise variance credited
// to the sampled part (the rest to the full-gradient part), see svrgNoise.
var svrgSplits = []float64{0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999}

// svrgNoise calibrates the per-coordinate std σ of the Gaussian noise u in
// each of steps inner steps of the DP-SVRG family, whose released direction
// is
//
//	(1/b) Σ_{i∈B} (∇f_i(x) − ∇f_i(x̃)) + ∇F(x̃) + u.
//
// As in the paper's proof of Theorem 4.1 the query splits into a sampled
// part (b of n examples, rate q = b/n; one example moves it by at most 4G/b)
// and the full-gradient part ∇F(x̃) (moved by at most 2G/n). Writing
// u = u₁ + u₂ with Var u₁ = fσ², Var u₂ = (1−f)σ², releasing both parts
// separately is at least as revealing as releasing their sum, so the step
// costs the RDP of a subsampled Gaussian with noise multiplier √f σ/(4G/b)
// plus that of a Gaussian with multiplier √(1−f) σ/(2G/n); the ledger
// composes both over all steps and f is chosen to minimise ε. The sampled
// part is charged the accountant's subsampled-Gaussian RDP at q = b/n and
// sensitivity 4G/b, which bounds both samplings under add/remove adjacency
// (one example added or removed; n the size of the larger data set of the
// pair, the full-gradient part then moving by at most 2G/n too):
//
//   - Poisson (each example with probability b/n, the sum divided by b):
//     adding z adds one term of norm ≤ 2G/b, so 4G/b is twice what the
//     analysis needs (conservative).
//   - One (exactly b distinct examples drawn uniformly; b = 1 is Algorithm
//     1): with D' = D ∪ {z}, a uniform b-subset of D' avoids z with
//     probability 1 − q, q = b/|D'|, and is then a uniform b-subset S of D;
//     otherwise it is S with a uniform member j replaced by z. So
//     M(D') = avg_{S,j} [(1−q) N(μ_S, σ²) + q N(μ_{S−j+z}, σ²)] and
//     M(D) = avg_{S,j} N(μ_S, σ²), with ‖μ_S − μ_{S−j+z}‖ ≤ 4G/b. By the
//     joint convexity of exp((α−1)D_α) (and of the hockey-stick divergence)
//     the divergence, either way round, is at most that of one pair
//     (1−q)N(0, σ²) + qN(4G/b, σ²) against N(0, σ²): the subsampled-Gaussian
//     pair the accountant evaluates (Mironov, Talwar and Zhang 2019 bound
//     both directions by it). The RDP grows with q, and q ≤ b/n for either
//     neighbour (n + 1 or n − 1 examples) of our n. TestSVRGOneSamplingBound
//     checks this bound against the exact Rényi divergence of the mixtures
//     by quadrature for tiny n. Replacing one example is two add/removes.
func svrgNoise(eps, delta float64, steps, n, batch int, G float64, opts []accountant.Option) (sigma, achieved, split float64, err error) {
	if math.IsInf(eps, 1) {
		return 0, math.Inf(1), 0, nil
	}
	if !(delta > 0 && delta < 1) {
		return 0, 0, 0, fmt.Errorf("erm: δ = %v: must be in (0, 1): %w", delta, ErrInvalid)
	}
	// Calibrate the scale z = σ/G.
	z, achieved, err := accountant.Calibrate(eps, func(z float64) (float64, error) {
		e, _, err := svrgEpsilon(z*G, delta, steps, n, batch, G, opts)
		return e, err
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("erm: calibrating DP-SVRG noise: %w", err)
	}
	_, split, err = svrgEpsilon(z*G, delta, steps, n, batch, G, opts)
	return z * G, achieved, split, err
}

// svrgEpsilon is svrgNoise's accountant run the other way: the ε at which
// steps inner steps with noise std sigma are (ε, δ)-DP, minimised over the
// variance split f (returned), +Inf where no order gives a finite bound.
func svrgEpsilon(sigma, delta float64, steps, n, batch int, G float64, opts []accountant.Option) (eps, split float64, err error) {
	if opts == nil {
		opts = []accountant.Option{accountant.WithOrders(accountant.OrdersUpTo(256))}
	}
	q := float64(batch) / float64(n)
	sampledSens := 4 * G / float64(batch)
	fullSens := 2 * G / float64(n)
	epsAt := func(f float64) (float64, error) {
		l := accountant.NewLedger(opts...)
		if err := l.Record(q, math.Sqrt(f)*sigma/sampledSens, steps); err != nil {
			return 0, err
		}
		if err := l.Record(1, math.Sqrt(1-f)*sigma/fullSens, steps); err != nil {
			return 0, err
		}
		s, err := l.Epsilon(delta)
		return s.Epsilon, err
	}
	best, bestF := math.Inf(1), svrgSplits[0]
	for _, f := range svrgSplits {
		e, err := epsAt(f)
		if err != nil {
			return 0, 0, err
		}
		if e < best {
			best, bestF = e, f
		}
	}
	return best, bestF, nil
}

// gaussianSettings validates what the Gaussian methods share and returns G.
func gaussianSettings(p *Problem, eps, delta float64) (G float64, err error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if !(eps > 0) {
		return 0, fmt.Errorf("erm: ε = %v: must be > 0 (+Inf for no noise): %w", eps, ErrInvalid)
	}
	if math.IsInf(eps, 1) {
		return 0, nil
	}
	if !(delta > 0 && delta < 1) {
		return 0, fmt.Errorf("erm: δ = %v: must be in (0, 1): %w", delta, ErrInvalid)
	}
	return p.Lipschitz()
}

// smoothLoss rejects non-smooth losses for the methods whose analysis needs
// L-smoothness and returns the data-independent smoothness of the loss part,
// β·R² (β·max‖x_i‖² without a declared bound, for noise-off runs).
func smoothLoss(p *Problem, method string) (float64, error) {
	if math.IsInf(p.Loss.Smoothness(), 1) {
		return 0, fmt.Errorf("erm: %s needs a smooth loss, not %s: %w", method, p.Loss.Name(), ErrUnsupported)
	}
	return p.Smoothness() - p.Lambda, nil
}
