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
// Orders need not be sorted but must be finite and greater than 1.
func SampledGaussianRDP(q, z float64, orders []float64) ([]float64, error) {
	if err := checkMechanism(q, z); err != nil {
		return nil, err
	}
	for _, a := range orders {
		if !(a > 1) || math.IsInf(a, 1) {
			return nil, fmt.Errorf("accountant: Rényi order %v: must be a finite number > 1: %w", a, ErrInvalidParameter)
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
	if q == 1 {
		for i, a := range orders {
			out[i] = a / (2 * z * z)
		}
		return
	}
	var logFact []float64 // log k!, built once for the largest integer order
	for i, a := range orders {
		var logA float64
		if a == math.Trunc(a) && a < 1<<30 {
			n := int(a)
			if len(logFact) <= n {
				logFact = logFactorials(n, logFact)
			}
			logA = logAInt(q, z, n, logFact)
		} else {
			logA = logAFrac(q, z, a)
		}
		// log A_α ≥ 0 in exact arithmetic (Rényi divergences are
		// non-negative); clamp rounding noise at tiny q.
		out[i] = max(logA, 0) / (a - 1)
	}
}

// logFactorials extends table so that table[k] = log k! for k ≤ n.
func logFactorials(n int, table []float64) []float64 {
	for k := len(table); k <= n; k++ {
		lg, _ := math.Lgamma(float64(k) + 1)
		table = append(table, lg)
	}
	return table
}

// logSum accumulates log Σ ±exp(tᵢ) in one pass, rescaling to the running
// maximum so that nothing overflows.
type logSum struct {
	max float64 // running maximum of the tᵢ, −Inf when empty
	sum float64 // Σ ±exp(tᵢ − max)
}

func newLogSum() logSum { return logSum{max: math.Inf(-1)} }

func (s *logSum) add(t float64, negative bool) {
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

// log returns the logarithm of the sum; −Inf if it is not positive.
func (s *logSum) log() float64 {
	if !(s.sum > 0) {
		return math.Inf(-1)
	}
	return s.max + math.Log(s.sum)
}

// logAInt is log A_α for integer α (Mironov, Talwar, Zhang 2019, Sec. 3.3):
//
//	A_α = Σ_{i=0}^{α} C(α,i) qⁱ (1−q)^{α−i} exp((i² − i)/(2z²)).
func logAInt(q, z float64, alpha int, logFact []float64) float64 {
	logQ, log1mQ := math.Log(q), math.Log1p(-q)
	inv2z2 := 1 / (2 * z * z)
	s := newLogSum()
	for i := 0; i <= alpha; i++ {
		fi := float64(i)
		logBinom := logFact[alpha] - logFact[i] - logFact[alpha-i]
		s.add(logBinom+fi*logQ+float64(alpha-i)*log1mQ+(fi*fi-fi)*inv2z2, false)
	}
	return s.log()
}

// maxSeriesTerms bounds the fractional-order series; it converges long
// before for any (q, z, α) of practical interest.
const maxSeriesTerms = 100000

// logAFrac is log A_α for fractional α: the two-sided series of Mironov,
// Talwar and Zhang (2019, Sec. 3.3) that splits the defining integral at
// z₀ = z² log(1/q − 1) + 1/2 and expands each side binomially:
//
//	A_α = Σ_{i≥0} C(α,i) [ qⁱ(1−q)^{α−i} e^{(i²−i)/(2z²)} · ½erfc((i−z₀)/(√2 z))
//	                      + q^{α−i}(1−q)ⁱ e^{(j²−j)/(2z²)} · ½erfc((z₀−j)/(√2 z)) ],  j = α − i.
//
// The series is summed until both terms fall below e^{−30} after passing
// i > α (where the binomial coefficients start alternating), as TF Privacy does.
func logAFrac(q, z, alpha float64) float64 {
	logQ, log1mQ := math.Log(q), math.Log1p(-q)
	inv2z2 := 1 / (2 * z * z)
	z0 := z*z*math.Log(1/q-1) + 0.5
	sqrt2z := math.Sqrt2 * z
	s0, s1 := newLogSum(), newLogSum()
	logCoef, negative := 0.0, false // log|C(α,i)| and its sign, updated incrementally
	for i := 0; i < maxSeriesTerms; i++ {
		fi := float64(i)
		j := alpha - fi
		logT0 := logCoef + fi*logQ + j*log1mQ
		logT1 := logCoef + j*logQ + fi*log1mQ
		logE0 := -math.Ln2 + logErfc((fi-z0)/sqrt2z)
		logE1 := -math.Ln2 + logErfc((z0-j)/sqrt2z)
		logS0 := logT0 + (fi*fi-fi)*inv2z2 + logE0
		logS1 := logT1 + (j*j-j)*inv2z2 + logE1
		s0.add(logS0, negative)
		s1.add(logS1, negative)
		if fi > alpha && max(logS0, logS1) < -30 {
			break
		}
		// C(α,i+1) = C(α,i)·(α−i)/(i+1)
		logCoef += math.Log(math.Abs(j)) - math.Log(fi+1)
		if j < 0 {
			negative = !negative
		}
	}
	a0, a1 := s0.log(), s1.log()
	hi, lo := max(a0, a1), min(a0, a1)
	if math.IsInf(hi, -1) {
		return hi
	}
	return hi + math.Log1p(math.Exp(lo-hi))
}
