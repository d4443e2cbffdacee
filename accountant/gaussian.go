package accountant

import (
	"fmt"
	"math"
)

// GaussianSigma returns the noise standard deviation of the classical
// Gaussian mechanism, σ = √(2 log(1.25/δ))·Δ/ε (Dwork and Roth 2014,
// Theorem A.1; Lemma 2.1 of the ADP-SGD paper), which makes one release of a
// query with L2 sensitivity Δ (sensitivity) (ε, δ)-DP. The theorem needs
// ε < 1, so larger ε are rejected. For reproducing the seed papers; for
// training, the Ledger is the default and far tighter.
func GaussianSigma(eps, delta, sensitivity float64) (float64, error) {
	if !(eps > 0 && eps < 1) {
		return 0, fmt.Errorf("accountant: ε = %v: the classical Gaussian mechanism needs ε in (0, 1): %w", eps, ErrInvalidParameter)
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if !(sensitivity > 0) || math.IsInf(sensitivity, 1) {
		return 0, fmt.Errorf("accountant: sensitivity Δ = %v: must be a finite number > 0: %w", sensitivity, ErrInvalidParameter)
	}
	return math.Sqrt(2*math.Log(1.25/delta)) * sensitivity / eps, nil
}
