package accountant

// Log-space arithmetic shared by the RDP sums.

import "math"

// log1pExp returns log(1 + eˣ) without overflow or loss for tiny eˣ.
func log1pExp(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// logExpm1 returns log(eˣ − 1) for x > 0.
func logExpm1(x float64) float64 {
	if x > 40 {
		return x // log1p(−e^{−x}) < 5e-18
	}
	if x > 1 {
		return x + math.Log1p(-math.Exp(-x))
	}
	return math.Log(math.Expm1(x))
}

// logDiffExp returns log|eᵃ − eᵇ| and whether eᵃ < eᵇ; −Inf when equal.
func logDiffExp(a, b float64) (float64, bool) {
	switch {
	case a > b:
		return a + math.Log(-math.Expm1(b-a)), false
	case b > a:
		return b + math.Log(-math.Expm1(a-b)), true
	}
	return math.Inf(-1), false
}

// logSum accumulates log Σ ±exp(tᵢ) in one pass, rescaling to the running
// maximum so that nothing overflows.
type logSum struct {
	max float64 // running maximum of the tᵢ, −Inf when empty
	sum float64 // Σ ±exp(tᵢ − max)
}

func newLogSum() logSum { return logSum{max: math.Inf(-1)} }

func (s *logSum) add(t float64, negative bool) {
	if math.IsNaN(t) {
		s.sum = t // poison: the caller turns a NaN result into +Inf RDP
		return
	}
	if math.IsInf(t, -1) {
		return
	}
	sign := 1.0
	if negative {
		sign = -1
	}
	if t > s.max {
		s.sum = s.sum*math.Exp(s.max-t) + sign
		s.max = t
		return
	}
	s.sum += sign * math.Exp(t-s.max)
}

// log returns the logarithm of the sum; −Inf if it is zero or negative, NaN
// if a NaN was added.
func (s *logSum) log() float64 {
	if math.IsNaN(s.sum) {
		return s.sum
	}
	if !(s.sum > 0) {
		return math.Inf(-1)
	}
	return s.max + math.Log(s.sum)
}

// signedExp returns ±eˣ.
func signedExp(x float64, negative bool) float64 {
	if negative {
		return -math.Exp(x)
	}
	return math.Exp(x)
}
