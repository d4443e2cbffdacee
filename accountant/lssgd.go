package accountant

import (
	"fmt"
	"math"
)

// This file holds the closed-form noise of the DP-LSSGD paper (Wang, Gu,
// Boedihardjo, Barekat, Osher, "DP-LSSGD: a stochastic optimization method
// to lift the utility in privacy-preserving ERM"), for reproducing its
// experiments. The Ledger is the default accountant: for the paper's logistic
// regression setting it certifies the same noise at an ε about six times
// smaller than Theorem 1 claims.

// LSSGDTheorem1Noise returns the per-coordinate Gaussian noise standard
// deviation ν of Theorem 1 of the DP-LSSGD paper, for steps iterations over n
// examples with G-Lipschitz losses (lipschitz = G), budget (eps, delta) and
// budget split mu in (0, 1):
//
//	ν² = 20·T·α·G²/(μ·n²·ε),  α = log(1/δ)/((1 − μ)ε) + 1.
//
// The theorem holds only under side conditions that LSSGDTheorem1Conditions
// checks; the paper's own experiments violate them.
func LSSGDTheorem1Noise(steps, n int, lipschitz, eps, delta, mu float64) (float64, error) {
	alpha, err := lssgdOrder(steps, n, eps, delta, mu)
	if err != nil {
		return 0, err
	}
	if !(lipschitz > 0) || math.IsInf(lipschitz, 1) {
		return 0, fmt.Errorf("accountant: Lipschitz constant G = %v: must be a finite number > 0: %w", lipschitz, ErrInvalidParameter)
	}
	nf := float64(n)
	return math.Sqrt(20 * float64(steps) * alpha * lipschitz * lipschitz / (mu * nf * nf * eps)), nil
}

// LSSGDCodeNoise returns the Gaussian noise standard deviation that the
// DP-LSSGD authors' logistic-regression code hard-codes: Theorem 1 with
// 20·G² replaced by 4, ν² = 4·T·α/(μ·n²·ε) (seeds digest §1.4: it matches
// their table 0.3471, 0.2316, 0.1739, 0.1393, 0.1162 for ε = 0.10 … 0.30).
// It equals LSSGDTheorem1Noise with G = 1/√5.
func LSSGDCodeNoise(steps, n int, eps, delta, mu float64) (float64, error) {
	alpha, err := lssgdOrder(steps, n, eps, delta, mu)
	if err != nil {
		return 0, err
	}
	nf := float64(n)
	return math.Sqrt(4 * float64(steps) * alpha / (mu * nf * nf * eps)), nil
}

// LSSGDTheorem1Conditions reports whether the side conditions of Theorem 1
// of the DP-LSSGD paper hold for batch size b and the given mu (they come
// from the subsampled-Gaussian bound of its Lemma 1):
//
//	α ≤ log(μ n³ ε / (5 b³ T α + μ b n² ε))   and   5 b² T α/(μ n² ε) ≥ 1.5.
//
// It returns nil when both hold and otherwise an error wrapping
// ErrInvalidParameter that names the failing condition and its values. The
// theorem asks for some mu in (0, 1) that satisfies both; callers scan mu.
func LSSGDTheorem1Conditions(steps, n, batch int, eps, delta, mu float64) error {
	alpha, err := lssgdOrder(steps, n, eps, delta, mu)
	if err != nil {
		return err
	}
	if batch < 1 || batch > n {
		return fmt.Errorf("accountant: batch size b = %d: must be in [1, n = %d]: %w", batch, n, ErrInvalidParameter)
	}
	nf, bf, tf := float64(n), float64(batch), float64(steps)
	bound := math.Log(mu * nf * nf * nf * eps / (5*bf*bf*bf*tf*alpha + mu*bf*nf*nf*eps))
	if !(alpha <= bound) {
		return fmt.Errorf("accountant: DP-LSSGD Theorem 1 condition α ≤ log(μn³ε/(5b³Tα + μbn²ε)) fails: α = %.4g > %.4g: %w", alpha, bound, ErrInvalidParameter)
	}
	if s := 5 * bf * bf * tf * alpha / (mu * nf * nf * eps); !(s >= 1.5) {
		return fmt.Errorf("accountant: DP-LSSGD Theorem 1 condition 5b²Tα/(μn²ε) ≥ 1.5 fails: it is %.4g: %w", s, ErrInvalidParameter)
	}
	return nil
}

// lssgdOrder validates the shared arguments and returns Theorem 1's Rényi
// order α = log(1/δ)/((1 − μ)ε) + 1.
func lssgdOrder(steps, n int, eps, delta, mu float64) (float64, error) {
	if steps < 1 {
		return 0, fmt.Errorf("accountant: steps = %d: must be ≥ 1: %w", steps, ErrInvalidParameter)
	}
	if n < 1 {
		return 0, fmt.Errorf("accountant: n = %d: must be ≥ 1: %w", n, ErrInvalidParameter)
	}
	if err := checkEpsilon(eps); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if !(mu > 0 && mu < 1) {
		return 0, fmt.Errorf("accountant: budget split μ = %v: must be in (0, 1): %w", mu, ErrInvalidParameter)
	}
	return math.Log(1/delta)/((1-mu)*eps) + 1, nil
}
