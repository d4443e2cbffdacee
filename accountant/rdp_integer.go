package accountant

import "math"

// binomialSum evaluates log(A_α − 1) at integer orders α (Mironov, Talwar,
// Zhang 2019, Sec. 3.3), where
//
//	A_α = Σ_{i=0}^{α} C(α,i) qⁱ (1−q)^{α−i} exp((i² − i)/(2z²)).
//
// Since the binomial weights sum to one, A_α − 1 is the same sum with exp(·)
// replaced by expm1(·), whose terms are all positive and vanish for i < 2:
// summing those keeps full relative precision even when A_α − 1 is far below
// the float64 resolution of 1, i.e. for tiny q. The parts of each log-term
// that depend only on i are tabulated once per (q, z), leaving two additions
// per term.
type binomialSum struct {
	logFact []float64 // log k!
	perI    []float64 // −log i! + i·log(q/(1−q)) + log expm1((i² − i)/(2z²))
	log1mQ  float64
}

func newBinomialSum(q, z float64, maxOrder int) *binomialSum {
	s := &binomialSum{
		logFact: make([]float64, maxOrder+1),
		perI:    make([]float64, maxOrder+1),
		log1mQ:  math.Log1p(-q),
	}
	logOdds := math.Log(q) - s.log1mQ
	inv2z2 := 1 / (2 * z * z)
	for k := range s.logFact {
		s.logFact[k], _ = math.Lgamma(float64(k) + 1)
		fk := float64(k)
		s.perI[k] = -s.logFact[k] + fk*logOdds + logExpm1((fk*fk-fk)*inv2z2)
	}
	return s
}

// logAMinus1 returns log(A_α − 1) for integer α ≤ the table size.
func (s *binomialSum) logAMinus1(alpha int) float64 {
	if alpha < 2 {
		return math.Inf(-1)
	}
	shift := s.logFact[alpha] + float64(alpha)*s.log1mQ
	// Find the largest term first (additions only), then exponentiate only
	// the terms that can matter (e^{−40} ≈ 4e-18).
	maxT := math.Inf(-1)
	for i := 2; i <= alpha; i++ {
		maxT = max(maxT, s.perI[i]-s.logFact[alpha-i])
	}
	sum := 0.0
	for i := 2; i <= alpha; i++ {
		if t := s.perI[i] - s.logFact[alpha-i]; t-maxT > -40 {
			sum += math.Exp(t - maxT)
		}
	}
	return shift + maxT + math.Log(sum)
}
