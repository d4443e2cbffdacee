package accountant

import (
	"fmt"
	"math"
)

// SampledGaussianRDP returns the Rényi DP, at each of the given orders, of
// one step of the Poisson-subsampled Gaussian mechanism: every record is
// included with probability q and Gaussian noise of standard deviation z
// times the L2 sensitivity is added (z is the noise multiplier). The
// analysis is that of Mironov, Talwar and Zhang, "Rényi differential privacy
// of the sampled Gaussian mechanism" (2019), computed in log space so that
// tiny q and large orders stay finite: RDP(α) = log A_α/(α − 1) with A_α the
// binomial sum for integer α and the two-sided erfc series otherwise.
// q = 1 gives the plain Gaussian mechanism, α/(2z²).
//
// Accuracy: about 1e-13 relative for q < 1/2 (the series sums A_α − 1, so
// even q = 1e-9 keeps full precision), of order 1e-15·α/(α − 1) absolute for
// q ≥ 1/2.
// Noise multipliers below 1e-100 give +Inf; above 1e100 the bound α/(2z²).
//
// Orders need not be sorted but must lie in (1, MaxOrder].
func SampledGaussianRDP(q, z float64, orders []float64) ([]float64, error) {
	if err := checkMechanism(q, z); err != nil {
		return nil, err
	}
	for _, a := range orders {
		if err := checkOrder(a); err != nil {
			return nil, err
		}
	}
	out := make([]float64, len(orders))
	sampledGaussianRDP(q, z, orders, out)
	return out, nil
}

func checkMechanism(q, z float64) error {
	if !(q > 0 && q <= 1) {
		return fmt.Errorf("accountant: sampling rate q = %v: must be in (0, 1]: %w", q, ErrInvalidParameter)
	}
	if !(z > 0) || math.IsInf(z, 1) {
		return fmt.Errorf("accountant: noise multiplier z = %v: must be a finite number > 0: %w", z, ErrInvalidParameter)
	}
	return nil
}

// sampledGaussianRDP writes the per-step RDP at orders into out; inputs are
// already validated.
func sampledGaussianRDP(q, z float64, orders, out []float64) {
	switch {
	case q == 1 || z > hugeNoise:
		// Exact at q = 1; for any q it is an upper bound (subsampling only
		// helps), within 1e-200 of the exact value once z > hugeNoise.
		for i, a := range orders {
			out[i] = a / (2 * z * z)
		}
		return
	case z < tinyNoise:
		// The RDP exceeds 1e190 at every order > 1: no privacy.
		for i := range orders {
			out[i] = math.Inf(1)
		}
		return
	}
	var sum *binomialSum // built on the first integer order
	var frac *fracSeries // built on the first fractional order
	for i, a := range orders {
		var logA float64
		if n := int(a); float64(n) == a {
			if sum == nil {
				sum = newBinomialSum(q, z, maxIntegerOrder(orders))
			}
			logA = log1pExp(sum.logAMinus1(n))
		} else {
			if frac == nil {
				frac = newFracSeries(q, z)
			}
			logA = frac.logA(a, true)
		}
		// log A_α ≥ 0 in exact arithmetic (Rényi divergences are
		// non-negative); clamp rounding noise. A NaN (not seen in tests)
		// would be a bug; +Inf keeps the ledger conservative.
		if math.IsNaN(logA) {
			logA = math.Inf(1)
		}
		out[i] = max(logA, 0) / (a - 1)
	}
}

func maxIntegerOrder(orders []float64) int {
	m := 0
	for _, a := range orders {
		if n := int(a); float64(n) == a {
			m = max(m, n)
		}
	}
	return m
}

// Noise multipliers outside [tinyNoise, hugeNoise] take closed-form bounds:
// the series would square them out of float64 range.
const (
	tinyNoise = 1e-100
	hugeNoise = 1e100
)
