package budget

import "math"

// Test-side closed forms, written independently of the accountant package.

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// gaussianDelta is the exact δ(ε) of the Gaussian mechanism with sensitivity 1 and
// noise σ (Balle and Wang 2018, Theorem 8): Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ).
// T steps of noise multiplier z compose to one Gaussian with σ = z/√T.
func gaussianDelta(sigma, eps float64) float64 {
	return normCDF(1/(2*sigma)-eps*sigma) - math.Exp(eps)*normCDF(-1/(2*sigma)-eps*sigma)
}

// gaussianEpsilon inverts gaussianDelta by bisection.
func gaussianEpsilon(sigma, delta float64) float64 {
	lo, hi := 0.0, 1.0
	for gaussianDelta(sigma, hi) > delta {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if gaussianDelta(sigma, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// testOrders are the Rényi orders the store composes at, written out: 1.1, 1.2, …, 10.9,
// then 12, 13, …, 256.
func testOrders() []float64 {
	var o []float64
	for i := 11; i <= 109; i++ {
		o = append(o, float64(i)/10)
	}
	for a := 12; a <= 256; a++ {
		o = append(o, float64(a))
	}
	return o
}

// gaussianRDPEpsilon is the ε at δ of T steps of the Gaussian mechanism (q = 1) with
// noise multiplier z by RDP: ε(α) = Tα/(2z²) (Mironov 2017, Proposition 7), converted by
// Balle et al. 2020, Theorem 21: ε = min over α of r(α) + log((α−1)/α) − (log δ + log α)/(α−1).
// extra is added to r(α) at every order (another curve's values, given per order).
func gaussianRDPEpsilon(T int, z, delta float64, extra func(a float64) float64) float64 {
	best := math.Inf(1)
	for _, a := range testOrders() {
		r := float64(T) * a / (2 * z * z)
		if extra != nil {
			r += extra(a)
		}
		e := r + math.Log((a-1)/a) - (math.Log(delta)+math.Log(a))/(a-1)
		best = min(best, e)
	}
	return max(best, 0)
}
