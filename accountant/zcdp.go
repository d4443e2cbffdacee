package accountant

import (
	"fmt"
	"math"
)

// The zCDP calibration of full-batch Gaussian gradient methods (DP-GD,
// DP-AccMD of the DP-ERM-revisited paper; seeds digest §4.6), for
// reproducing the seed papers; the Ledger (Record(1, z, steps)) is the
// default and gives a slightly smaller ε. With replace-one adjacency the
// gradient of the average of n G-Lipschitz losses has L2 sensitivity 2G/n,
// so steps Gaussian steps of standard deviation σ are ρ-zCDP with
// ρ = steps·(2G/n)²/(2σ²) (Bun and Steinke 2016, Prop. 1.6 and Lemma 2.3),
// which is (ρ + 2√(ρ log(1/δ)), δ)-DP (Prop. 1.3).

// GaussianZCDPSigma returns the noise standard deviation σ that makes steps
// full-batch gradient steps over n examples with G-Lipschitz losses
// (lipschitz = G) (eps, delta)-DP under zCDP accounting:
// ρ* = (√(log(1/δ) + ε) − √(log(1/δ)))², σ = G·√(2·steps/ρ*)/n.
func GaussianZCDPSigma(eps, delta float64, steps int, n int, lipschitz float64) (float64, error) {
	if err := checkZCDP(delta, steps, n, lipschitz, "ε", eps); err != nil {
		return 0, err
	}
	l := math.Log(1 / delta)
	// √(l+ε) − √l = ε/(√(l+ε) + √l) avoids cancellation for small ε.
	sqrtRho := eps / (math.Sqrt(l+eps) + math.Sqrt(l))
	return lipschitz * math.Sqrt(2*float64(steps)) / (sqrtRho * float64(n)), nil
}

// ZCDPEpsilon is the inverse of GaussianZCDPSigma: the ε at which steps
// full-batch Gaussian steps of standard deviation sigma over n examples with
// G-Lipschitz losses are (ε, delta)-DP, ε = ρ + 2√(ρ log(1/δ)) with
// ρ = 2·steps·G²/(n²σ²).
func ZCDPEpsilon(sigma, delta float64, steps int, n int, lipschitz float64) (float64, error) {
	if err := checkZCDP(delta, steps, n, lipschitz, "σ", sigma); err != nil {
		return 0, err
	}
	rho := 2 * float64(steps) * lipschitz * lipschitz / (float64(n) * float64(n) * sigma * sigma)
	return rho + 2*math.Sqrt(rho*math.Log(1/delta)), nil
}

// checkZCDP validates the shared arguments; name/value is the positive
// quantity being converted (ε or σ).
func checkZCDP(delta float64, steps, n int, lipschitz float64, name string, value float64) error {
	if !(value > 0) || math.IsInf(value, 1) {
		return fmt.Errorf("accountant: %s = %v: must be a finite number > 0: %w", name, value, ErrInvalidParameter)
	}
	if err := checkDelta(delta); err != nil {
		return err
	}
	if steps < 1 {
		return fmt.Errorf("accountant: steps = %d: must be ≥ 1: %w", steps, ErrInvalidParameter)
	}
	if n < 1 {
		return fmt.Errorf("accountant: n = %d: must be ≥ 1: %w", n, ErrInvalidParameter)
	}
	if !(lipschitz > 0) || math.IsInf(lipschitz, 1) {
		return fmt.Errorf("accountant: Lipschitz constant G = %v: must be a finite number > 0: %w", lipschitz, ErrInvalidParameter)
	}
	return nil
}
