package accountant

import "math"

// maxSeriesTerms bounds the fractional-order series summed term by term (a
// test path); maxAcceleratedTerms bounds the accelerated one, which converges
// within a few dozen terms for any (q, z, α) of practical use.
const (
	maxSeriesTerms      = 1 << 20
	maxAcceleratedTerms = 1 << 14
)

// eulerLevels is the number of partial-sum averaging levels used to
// accelerate the alternating tail of the fractional-order series.
const eulerLevels = 8

// seriesTolerance is the relative change of the accelerated sum below which
// the series is considered converged.
const seriesTolerance = 1e-15

// fracSeries evaluates log A_α at fractional orders α for one (q, z), from
// the two-sided series of Mironov, Talwar and Zhang (2019, Sec. 3.3). It
// splits the defining integral A_α = E_{x~N(0,z²)}[(1 − q + q·e^{(2x−1)/(2z²)})^α]
// at z₀ = z² log(1/q − 1) + 1/2, where the base's two summands are equal,
// and expands each side binomially in the ratio of the smaller to the larger:
//
//	left  = Σ_{i≥0} C(α,i) qⁱ(1−q)^{α−i} e^{cᵢ} Eᵢ,      cᵢ = (i²−i)/(2z²), Eᵢ = ½erfc((i−z₀)/(√2 z)),
//	right = Σ_{i≥0} C(α,i) q^{j}(1−q)ⁱ e^{cⱼ} ½erfc((z₀−j)/(√2 z)),  j = α − i.
//
// For q < 1/2 it sums A_α − 1 instead, so that tiny q keep their relative
// precision: with Σ_i C(α,i) qⁱ(1−q)^{α−i} = 1 (convergent for q < 1/2)
// and E₀ = P(x < z₀),
//
//	left − E₀ = Σ_{i≥1} C(α,i) qⁱ(1−q)^{α−i} (e^{cᵢ}Eᵢ − E₀),   right − (1 − E₀),
//
// where e^{cᵢ}Eᵢ − E₀ = expm1(cᵢ)Eᵢ − P(z₀ − i ≤ x < z₀) is formed without
// cancellation. That factor depends on i but not on α, so it is tabulated
// once for all orders.
//
// Past i > α the binomial coefficients alternate in sign, and when z₀/z is
// moderate the terms decay only like i^{−α−2} (TF Privacy needs thousands of
// terms near α = 1 there). That alternating tail is summed with repeated
// averaging of partial sums (the Euler transform), which reaches 1e-15
// within a few dozen terms.
type fracSeries struct {
	minus1                   bool // sum A_α − 1 (q < 1/2)
	logQ, log1mQ, inv2z2, z0 float64
	sqrt2z, logHalfTailZ0    float64 // √2·z, log P(x ≥ z₀)
	leftLog                  []float64
	leftNeg                  []bool // log|·| and sign of the α-free left factor, by i
}

func newFracSeries(q, z float64) *fracSeries {
	s := &fracSeries{
		minus1: q < 0.5,
		logQ:   math.Log(q),
		log1mQ: math.Log1p(-q),
		inv2z2: 1 / (2 * z * z),
		z0:     z*z*math.Log(1/q-1) + 0.5,
		sqrt2z: math.Sqrt2 * z,
	}
	s.logHalfTailZ0 = -math.Ln2 + logErfc(s.z0/s.sqrt2z)
	return s
}

// leftFactor returns log|f| and the sign of the left factor of index i:
// e^{cᵢ}Eᵢ, or e^{cᵢ}Eᵢ − E₀ when summing A_α − 1.
func (s *fracSeries) leftFactor(i int) (float64, bool) {
	for k := len(s.leftLog); k <= i; k++ {
		fk := float64(k)
		c := (fk*fk - fk) * s.inv2z2
		logE := -math.Ln2 + logErfc((fk-s.z0)/s.sqrt2z)
		var f float64
		var neg bool
		switch {
		case !s.minus1:
			f = c + logE
		case k == 0:
			f = math.Inf(-1) // e^{c₀}E₀ − E₀ = 0
		default:
			// e^{cᵢ}Eᵢ − E₀ = expm1(cᵢ)Eᵢ − P(z₀ − i ≤ x < z₀)
			pos := math.Inf(-1)
			if c > 0 {
				pos = logExpm1(c) + logE
			}
			lowTail := -math.Ln2 + logErfc((s.z0-fk)/s.sqrt2z) // P(x ≥ z₀ − i)
			band, _ := logDiffExp(lowTail, s.logHalfTailZ0)    // P(z₀ − i ≤ x < z₀)
			f, neg = logDiffExp(pos, band)
		}
		s.leftLog = append(s.leftLog, f)
		s.leftNeg = append(s.leftNeg, neg)
	}
	return s.leftLog[i], s.leftNeg[i]
}

// logA returns log A_α; accelerate = false sums the tail term by term until
// it is negligible (slow near α = 1; kept for tests).
func (s *fracSeries) logA(alpha float64, accelerate bool) float64 {
	// term returns the logs and signs of the left and right terms of index
	// i, given log|C(α,i)| and its sign.
	term := func(i int, logCoef float64, negative bool) (logS0 float64, neg0 bool, logS1 float64) {
		fi := float64(i)
		j := alpha - fi
		logS1 = logCoef + j*s.logQ + fi*s.log1mQ + (j*j-j)*s.inv2z2 - math.Ln2 + logErfc((s.z0-j)/s.sqrt2z)
		f, fneg := s.leftFactor(i)
		return logCoef + fi*s.logQ + j*s.log1mQ + f, negative != fneg, logS1
	}

	head := newLogSum() // terms before the alternating tail
	if s.minus1 {
		head.add(s.logHalfTailZ0, true) // right − (1 − E₀)
	}
	tailStart := int(math.Ceil(alpha)) + 1 // coefficients alternate from here on
	logCoef, negative := 0.0, false        // log|C(α,i)| and its sign
	i := 0
	next := func() { // C(α,i+1) = C(α,i)·(α−i)/(i+1)
		j := alpha - float64(i)
		logCoef += math.Log(math.Abs(j) / (float64(i) + 1))
		if j < 0 {
			negative = !negative
		}
		i++
	}
	for ; i < tailStart; next() {
		logS0, neg0, logS1 := term(i, logCoef, negative)
		head.add(logS0, neg0)
		head.add(logS1, negative)
	}
	logHead := head.log()

	var logTotal float64
	if !accelerate {
		for ; i < maxSeriesTerms; next() {
			logS0, neg0, logS1 := term(i, logCoef, negative)
			head.add(logS0, neg0)
			head.add(logS1, negative)
			if max(logS0, logS1)-logHead < -40 {
				break
			}
		}
		logTotal = head.log()
	} else {
		// Tail terms are summed in linear scale relative to the head.
		ref := logHead
		if math.IsInf(ref, -1) {
			logS0, _, logS1 := term(i, logCoef, negative)
			ref = max(logS0, logS1)
		}
		headScaled := 0.0
		if !math.IsInf(logHead, -1) {
			headScaled = 1
		}
		// euler[k] is the k-th repeated average of neighbouring partial sums
		// (euler[0] is the partial sum itself); its last level is the
		// accelerated estimate of the tail.
		var euler, prev [eulerLevels + 1]float64
		est, prevEst, steady, negligible := 0.0, 0.0, 0, 0
		for n := 0; i < maxAcceleratedTerms; n++ {
			logS0, neg0, logS1 := term(i, logCoef, negative)
			prev = euler
			euler[0] += signedExp(logS0-ref, neg0) + signedExp(logS1-ref, negative)
			for k := 1; k <= min(n, eulerLevels); k++ {
				euler[k] = (prev[k-1] + euler[k-1]) / 2
			}
			next()
			// Terms that fell below e^{−40} of the head twice in a row end a
			// fast-decaying (tiny q) tail without waiting for the transform.
			if max(logS0, logS1)-ref < -40 && headScaled == 1 {
				if negligible++; negligible == 2 {
					est = euler[0]
					break
				}
			} else {
				negligible = 0
			}
			if n < eulerLevels {
				est = euler[0]
				continue
			}
			prevEst, est = est, euler[eulerLevels]
			if math.Abs(est-prevEst) <= seriesTolerance*math.Abs(headScaled+est) {
				if steady++; steady == 2 {
					break
				}
			} else {
				steady = 0
			}
		}
		logTotal = ref + math.Log(headScaled+est)
	}
	if s.minus1 {
		return log1pExp(logTotal) // log A from log(A − 1)
	}
	return logTotal
}
