package privrand

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Poisson is the Poisson sampler: every step includes each of n examples independently
// with probability q. A step costs O(q·n) draws: the gap from one included index to the
// next is Geometric(q), P(gap = k) = (1−q)^(k−1)·q for k ≥ 1, drawn by inversion as
// 1 + ⌊ln U / ln(1−q)⌋ with U uniform on (0, 1].
type Poisson struct {
	n       int
	q       float64
	logKeep float64 // ln(1−q), < 0 for 0 < q < 1
}

// NewPoisson returns the sampler of inclusion probability q over n examples. It rejects
// n < 0 and q outside [0, 1] (NaN included).
func NewPoisson(n int, q float64) (Poisson, error) {
	if n < 0 {
		return Poisson{}, fmt.Errorf("privrand: Poisson sampling of %d examples", n)
	}
	if !(q >= 0 && q <= 1) {
		return Poisson{}, fmt.Errorf("privrand: Poisson sampling rate %v, want 0 ≤ q ≤ 1", q)
	}
	return Poisson{n: n, q: q, logKeep: math.Log1p(-q)}, nil
}

// N returns the number of examples.
func (p Poisson) N() int { return p.n }

// Q returns the inclusion probability.
func (p Poisson) Q() float64 { return p.q }

// Sample draws one step's batch: it returns buf[:0] with the included indices appended in
// increasing order.
func (p Poisson) Sample(r *rand.Rand, buf []int) []int {
	buf = buf[:0]
	switch {
	case p.q == 0 || p.n == 0:
		return buf
	case p.q == 1:
		for i := range p.n {
			buf = append(buf, i)
		}
		return buf
	}
	for i := -1; ; {
		u := 1 - r.Float64() // (0, 1]: ln U is finite
		// ⌊ln U / ln(1−q)⌋ ≥ 0 may be huge or +Inf for a tiny q; compare it as a float
		// before converting, so that it cannot overflow an int.
		skip := math.Floor(math.Log(u) / p.logKeep)
		if skip >= float64(p.n-1-i) {
			return buf
		}
		i += 1 + int(skip)
		buf = append(buf, i)
	}
}

// BatchBound returns the smallest b with P(batch size > b) ≤ tail: the batch size is
// Binomial(n, q), whose probabilities are summed from 0 up (their rounding, about 1e-15,
// is far below the tails callers use). It depends on n and q only, never on the data, so
// a bound derived from it (a cap on the rows a step processes, the sensitivity a noise is
// sized for) can be public. A tail ≤ 0 gives n.
func (p Poisson) BatchBound(tail float64) int {
	if p.q >= 1 || !(tail > 0) {
		return p.n
	}
	if p.q == 0 {
		return 0
	}
	lq := math.Log(p.q)
	ln, _ := math.Lgamma(float64(p.n) + 1)
	cdf := 0.0
	for k := range p.n {
		lk, _ := math.Lgamma(float64(k) + 1)
		lnk, _ := math.Lgamma(float64(p.n-k) + 1)
		cdf += math.Exp(ln - lk - lnk + float64(k)*lq + float64(p.n-k)*p.logKeep)
		if 1-cdf <= tail {
			return k
		}
	}
	return p.n
}
