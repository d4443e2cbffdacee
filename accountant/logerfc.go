package accountant

import "math"

// logErfcSwitch is where logErfc leaves math.Erfc for the asymptotic series:
// erfc(20) ≈ 5e-176 is still a normal float64 computed to full relative
// precision (math.Erfc underflows into subnormals near x = 26.5), and there
// the series below is already accurate to about 1e-19.
const logErfcSwitch = 20

// logErfc returns log(erfc(x)) without underflow for large x.
//
// For x ≥ logErfcSwitch it uses the asymptotic expansion (Abramowitz and
// Stegun 7.1.23)
//
//	erfc(x) = exp(−x²)/(x√π) · Σ_{n≥0} (−1)ⁿ (2n−1)!! / (2x²)ⁿ,
//
// truncated after ten terms; at x = 20 the first omitted term is below 1e-19.
func logErfc(x float64) float64 {
	if x < logErfcSwitch {
		return math.Log(math.Erfc(x))
	}
	return logErfcAsymptotic(x)
}

// logErfcAsymptotic is the asymptotic expansion of log(erfc(x)), accurate
// to better than 1e-15 relative for x ≥ 12.
func logErfcAsymptotic(x float64) float64 {
	if math.IsInf(x, 1) {
		return math.Inf(-1)
	}
	u := 1 / (2 * x * x)
	sum, term := 0.0, 1.0
	for n := 1; n <= 10; n++ {
		term *= -float64(2*n-1) * u
		sum += term
	}
	return -x*x - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log1p(sum)
}
