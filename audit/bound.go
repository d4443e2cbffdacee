package audit

import (
	"errors"
	"fmt"
	"math"
)

// ErrConfig reports an audit that cannot run or a bound that cannot be computed: counts
// out of range, a confidence outside (0, 1), δ outside [0, 1), a training configuration
// the trainer refuses.
var ErrConfig = errors.New("audit: invalid configuration")

// PValue is the probability, under the hypothesis that the mechanism is (ε, δ)-DP, of v or
// more correct guesses among r guesses about m canaries, each included independently with
// probability 1/2: Theorem 1 of Steinke, Nasr & Jagielski (NeurIPS 2023), as evaluated by
// their Algorithm 2 (appendix D),
//
//	P[W ≥ v] ≤ f(v) + 2mδ · max_{i=1…v} (f(v−i) − f(v)) / i,   f(x) = P[Binomial(r, e^ε/(1+e^ε)) ≥ x],
//
// capped at 1. With δ = 0 it is the binomial tail f(v) of their pure-DP statement. It
// panics on arguments outside 0 ≤ v ≤ r ≤ m, ε ≥ 0, 0 ≤ δ ≤ 1 (EpsilonLowerBound checks
// them and returns errors).
func PValue(m, r, v int, eps, delta float64) float64 {
	if !(0 <= v && v <= r && r <= m) || !(eps >= 0) || !(delta >= 0 && delta <= 1) {
		panic(fmt.Sprintf("audit: PValue(m=%d, r=%d, v=%d, ε=%v, δ=%v) out of range", m, r, v, eps, delta))
	}
	lp, lq := logSigmoid(eps), logSigmoid(-eps) // log P(correct), log P(wrong) of ε-DP randomised response
	p := math.Exp(logBinomialTail(r, v, lp, lq))
	if delta > 0 && v > 0 {
		// sum = f(v−i) − f(v) = P[v−i ≤ Binomial < v], grown one term at a time.
		var alpha, sum float64
		for i := 1; i <= v; i++ {
			sum += math.Exp(logBinomialPMF(r, v-i, lp, lq))
			alpha = max(alpha, sum/float64(i))
		}
		p += 2 * float64(m) * delta * alpha
	}
	return min(p, 1)
}

// EpsilonLowerBound returns the largest ε (to within 1e-6) whose PValue is below
// 1 − confidence: with probability at least confidence over the canaries' coins, a
// mechanism that is (ε', δ)-DP for some ε' below the returned ε would not have produced v
// correct guesses out of r. It returns 0 when even ε = 0 explains the guesses.
//
// As the paper's Algorithm 2 does, the largest ε is found by bisection on the p-value,
// which grows with ε (the binomial tail does; the δ term can wiggle but is small for the
// δ of practice).
func EpsilonLowerBound(m, r, v int, confidence, delta float64) (float64, error) {
	switch {
	case m < 1 || r < 0 || r > m || v < 0 || v > r:
		return 0, fmt.Errorf("%w: %d correct of %d guesses about %d canaries, want 0 ≤ correct ≤ guesses ≤ canaries, canaries ≥ 1", ErrConfig, v, r, m)
	case !(confidence > 0 && confidence < 1):
		return 0, fmt.Errorf("%w: confidence %v, want it in (0, 1)", ErrConfig, confidence)
	case !(delta >= 0 && delta < 1):
		return 0, fmt.Errorf("%w: δ = %v, want δ in [0, 1)", ErrConfig, delta)
	}
	beta := 1 - confidence
	if PValue(m, r, v, 0, delta) >= beta {
		return 0, nil
	}
	lo, hi := 0.0, 1.0
	for PValue(m, r, v, hi, delta) < beta {
		lo, hi = hi, 2*hi
		if hi > 1e3 { // not reachable for v ≤ r: P[Binomial ≥ v] → 1 as ε → ∞
			return lo, nil
		}
	}
	for hi-lo > 1e-6 {
		mid := (lo + hi) / 2
		if PValue(m, r, v, mid, delta) < beta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// logSigmoid is log(1/(1+e^{−x})), accurate for large |x|.
func logSigmoid(x float64) float64 {
	if x >= 0 {
		return -math.Log1p(math.Exp(-x))
	}
	return x - math.Log1p(math.Exp(x))
}

// logBinomialPMF is log P[Binomial(n, p) = k] with lp = log p, lq = log(1−p).
func logBinomialPMF(n, k int, lp, lq float64) float64 {
	if k < 0 || k > n {
		return math.Inf(-1)
	}
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c + xlog(k, lp) + xlog(n-k, lq)
}

// xlog is k·l with 0·(−∞) = 0, so that p = 0 or 1 give exact point masses.
func xlog(k int, l float64) float64 {
	if k == 0 {
		return 0
	}
	return float64(k) * l
}

// logBinomialTail is log P[Binomial(n, p) ≥ v], summed in log space from the largest term.
func logBinomialTail(n, v int, lp, lq float64) float64 {
	if v <= 0 {
		return 0
	}
	if v > n {
		return math.Inf(-1)
	}
	terms := make([]float64, 0, n-v+1)
	top := math.Inf(-1)
	for k := v; k <= n; k++ {
		t := logBinomialPMF(n, k, lp, lq)
		terms = append(terms, t)
		top = max(top, t)
	}
	if math.IsInf(top, -1) {
		return top
	}
	var s float64
	for _, t := range terms {
		s += math.Exp(t - top)
	}
	return min(top+math.Log(s), 0)
}
