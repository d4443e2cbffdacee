package accountant

import (
	"math"
	"math/cmplx"
	"sync"

	"gonum.org/v1/gonum/dsp/fourier"
)

// This file holds the discrete privacy loss distributions (PLDs) behind the
// PLD accountant: their pessimistic construction for one step of the
// Poisson-subsampled Gaussian mechanism, composition by FFT and the
// hockey-stick divergence δ(ε) of the result.
//
// A pair of output distributions (P, Q) of a mechanism on neighbouring data
// sets has the privacy loss L = log(P(x)/Q(x)) with x ~ P; its distribution
// ω determines the hockey-stick curve
//
//	δ(ε) = E_ω[(1 − e^{ε−L})₊] (+ the mass of ω at +∞),
//
// the smallest δ for which the pair is (ε, δ)-close. Independent composition
// adds losses, so the PLD of a composition is the convolution of the PLDs.
//
// Discretisation ("connect the dots", Doroshenko, Ghazi, Kamath, Kumar and
// Manurangsi, PETS 2022). On the grid εₖ = kΔ the discrete PLD is chosen so
// that its δ(εₖ) equals the true δ(εₖ) at every grid point. Between grid
// points a discrete PLD's δ is linear in e^ε, and the true δ is convex in e^ε,
// so the discrete curve lies above the true one everywhere: the discrete pair
// dominates the true pair (Blackwell), composition preserves dominance, and
// the composed ε is an upper bound. Derivation of the masses: with
// dₖ = δ(εₖ) and a discrete PLD p on the grid (plus p∞),
//
//	dₖ − dₖ₊₁ = (1 − e^{−Δ})·(pₖ₊₁ + Cₖ₊₁),  Cₖ = Σ_{i>k} pᵢ e^{εₖ−εᵢ} = e^{−Δ}(pₖ₊₁ + Cₖ₊₁),
//
// so with Sₖ = (dₖ − dₖ₊₁)/(1 − e^{−Δ}): pⱼ = Sⱼ₋₁ − e^{−Δ}Sⱼ (≥ 0 by
// convexity). Writing dₖ = P(L > εₖ) − e^{εₖ}Q(L > εₖ) and expanding,
//
//	Sₖ = wₖ + e^{εₖ₊₁}Q(L > εₖ₊₁),  wₖ = (P(Iₖ) − e^{εₖ}Q(Iₖ))/(1 − e^{−Δ}),
//	pⱼ = e^{εⱼ}Q(Iⱼ) + wⱼ₋₁ − e^{−Δ}wⱼ,
//
// with Iₖ = {εₖ < L ≤ εₖ₊₁}. This form needs only interval probabilities of
// Gaussians, which are computed to full relative precision, instead of
// second differences of δ (which would lose most digits at Δ = 1e-4). At the
// top grid point U the mass above it goes to +∞ (p∞ = P(L > ε_U) ≥ d_U), and
// the lowest grid point takes the remaining mass, which moves the truncated
// lower tail up (pessimistic) and makes the curve below ε_L the chord to
// (e^ε = 0, δ = 1), again above the convex true curve.

// pldDist is a discrete privacy loss distribution: mass p[i] at loss
// (lo+i)·Δ and mass inf at +∞ (which holds the truncated upper tails).
type pldDist struct {
	lo  int
	p   []float64
	inf float64
	// over reports that the grid would exceed maxPLDGrid points; the
	// caller retries with a coarser grid.
	over bool
}

// maxPLDGrid bounds the number of grid points of any PLD or FFT.
const maxPLDGrid = 1 << 22

// Standard normal tails. s(a) = P(Z > |a|) is computed to full relative
// precision; both Φ(a) and Φ̄(a) follow from it.
func smallTail(a float64) float64 { return 0.5 * math.Erfc(math.Abs(a)/math.Sqrt2) }

// normMassFromTails returns P(a < Z ≤ b) for a ≤ b from sa = smallTail(a),
// sb = smallTail(b), without cancellation when both lie in the same tail.
func normMassFromTails(a, b, sa, sb float64) float64 {
	switch {
	case a >= 0:
		return sa - sb
	case b <= 0:
		return sb - sa
	}
	return 1 - sa - sb
}

// phiFromTail returns Φ(a) given sa = smallTail(a).
func phiFromTail(a, sa float64) float64 {
	if a < 0 {
		return sa
	}
	return 1 - sa
}

// logMix returns log((1 − q) + q·eᵘ) without overflow or cancellation.
func logMix(q, u float64) float64 {
	if q == 1 {
		return u
	}
	if u < 1 {
		return math.Log1p(q * math.Expm1(u))
	}
	return u + math.Log(q+(1-q)*math.Exp(-u))
}

// pldTruncationSigmas returns k with P(Z > k) = tail: the per-step
// truncation of the Gaussian's support, in standard deviations.
func pldTruncationSigmas(tail float64) float64 {
	return math.Sqrt2 * math.Erfcinv(2*tail)
}

// maxStepLoss caps the grid of one step's PLD: losses above it (reached only
// by tiny noise multipliers) go to +∞, which is pessimistic.
const maxStepLoss = 40

// subsampledGaussianPLD returns the pessimistic discrete PLD, on the grid of
// width d, of one step of the Poisson-subsampled Gaussian mechanism with
// sampling rate q and noise multiplier z (sensitivity 1, σ = z).
//
// remove (add = false): P = (1−q)N(0,σ²) + qN(1,σ²) against Q = N(0,σ²);
// add: the swapped pair. The loss of the remove pair is
// L(x) = log(1 − q + q·e^{(2x−1)/(2σ²)}), increasing in x, and L > ε iff
// x > σ²·log1p(expm1(ε)/q) + 1/2; the add pair has loss −L(x) under N(0,σ²).
// tail is the Gaussian mass left outside the computed support.
func subsampledGaussianPLD(q, z, d float64, add bool, tail float64) pldDist {
	sigma := z
	s2 := sigma * sigma
	k := pldTruncationSigmas(tail)
	loss := func(x float64) float64 { return logMix(q, (2*x-1)/(2*s2)) }
	// threshold(ε): the x at which the loss crosses ε (−Inf/+Inf beyond range).
	var threshold func(eps float64) float64
	var lossLo, lossHi float64
	if !add {
		threshold = func(eps float64) float64 {
			v := math.Expm1(eps) / q
			if v <= -1 {
				return math.Inf(-1)
			}
			return s2*math.Log1p(v) + 0.5
		}
		lossLo, lossHi = loss(-k*sigma), loss(1+k*sigma)
	} else {
		threshold = func(eps float64) float64 {
			v := math.Expm1(-eps) / q
			if v <= -1 {
				return math.Inf(-1)
			}
			return s2*math.Log1p(v) + 0.5
		}
		lossLo, lossHi = -loss(k*sigma), -loss(-k*sigma)
	}
	lossLo = max(lossLo, -maxStepLoss)
	lossHi = min(lossHi, maxStepLoss)
	L := int(math.Floor(lossLo / d))
	U := int(math.Ceil(lossHi / d))
	if U <= L {
		U = L + 1
	}
	n := U - L + 1
	if n > maxPLDGrid {
		return pldDist{over: true}
	}
	// a, b: standardized thresholds for N(0,σ²) and N(1,σ²); sa, sb their tails.
	a := make([]float64, n)
	b := make([]float64, n)
	sa := make([]float64, n)
	sb := make([]float64, n)
	for i := range n {
		x := threshold(float64(L+i) * d)
		a[i], b[i] = x/sigma, (x-1)/sigma
		sa[i], sb[i] = smallTail(a[i]), smallTail(b[i])
	}
	em := -math.Expm1(-d) // 1 − e^{−Δ}
	ed := math.Exp(-d)
	eD := math.Exp(d)
	log1mq := math.Log1p(-q)
	// Per interval i (between grid points i and i+1): Q(Iᵢ) and wᵢ.
	qI := make([]float64, n)
	w := make([]float64, n) // w[n−1] = 0
	var ee float64          // e^{εᵢ}, by a recurrence re-anchored every 256 points
	for i := 0; i < n-1; i++ {
		eps := float64(L+i) * d
		if i%256 == 0 {
			ee = math.Exp(eps)
		} else {
			ee *= eD
		}
		var n0, n1 float64
		if !add { // x ∈ (x_i, x_{i+1}]
			n0 = normMassFromTails(a[i], a[i+1], sa[i], sa[i+1])
			n1 = normMassFromTails(b[i], b[i+1], sb[i], sb[i+1])
			qI[i] = n0
			w[i] = (q*n1 - (math.Expm1(eps)+q)*n0) / em
		} else { // x ∈ [x_{i+1}, x_i)
			n0 = normMassFromTails(a[i+1], a[i], sa[i+1], sa[i])
			n1 = normMassFromTails(b[i+1], b[i], sb[i+1], sb[i])
			qI[i] = (1-q)*n0 + q*n1
			w[i] = (-math.Expm1(eps+log1mq)*n0 - ee*q*n1) / em
		}
	}
	// Tails above the top grid point.
	var pTop, qTop float64
	if !add {
		qTop = 1 - phiFromTail(a[n-1], sa[n-1])
		pTop = (1-q)*qTop + q*(1-phiFromTail(b[n-1], sb[n-1]))
	} else {
		pTop = phiFromTail(a[n-1], sa[n-1])
		qTop = (1-q)*pTop + q*phiFromTail(b[n-1], sb[n-1])
	}
	p := make([]float64, n)
	epsTop := float64(U) * d
	p[n-1] = math.Exp(epsTop)*qTop + w[n-2]
	for j := n - 2; j >= 1; j-- {
		if (n-2-j)%256 == 0 {
			ee = math.Exp(float64(L+j) * d)
		} else {
			ee *= ed
		}
		p[j] = ee*qI[j] + w[j-1] - ed*w[j]
	}
	inf := max(pTop, 0)
	rest := 0.0
	for j := n - 1; j >= 1; j-- {
		if !(p[j] > 0) { // rounding at the level of 1e-12 relative
			p[j] = 0
		}
		rest += p[j]
	}
	p[0] = max(1-inf-rest, 0)
	return trimDist(pldDist{lo: L, p: p, inf: inf})
}

// trimDist drops zero masses at both ends.
func trimDist(x pldDist) pldDist {
	i, j := 0, len(x.p)
	for i < j && x.p[i] == 0 {
		i++
	}
	for j > i && x.p[j-1] == 0 {
		j--
	}
	if i == j {
		return pldDist{lo: 0, p: nil, inf: x.inf}
	}
	return pldDist{lo: x.lo + i, p: x.p[i:j], inf: x.inf}
}

// delta returns δ(ε) = inf + Σ pᵢ(1 − e^{ε−εᵢ})₊ of the discrete PLD.
func (x pldDist) delta(eps, d float64) float64 {
	s := 0.0
	for i := len(x.p) - 1; i >= 0; i-- {
		li := float64(x.lo+i) * d
		if li <= eps {
			break
		}
		s += x.p[i] * -math.Expm1(eps-li)
	}
	return min(x.inf+s, 1)
}

// epsilon returns the smallest ε ≥ 0 with δ(ε) ≤ delta (+Inf if the mass at
// infinity alone exceeds delta). δ(ε) is piecewise of the form A − B·e^ε, so
// the crossing is solved exactly within its grid interval.
func (x pldDist) epsilon(delta, d float64) float64 {
	if x.inf >= delta {
		return math.Inf(1)
	}
	// Walk down from the top: A = Σ_{i≥k} pᵢ, C = Σ_{i≥k} pᵢ e^{εₖ−εᵢ};
	// on [ε_{k−1}, ε_k], δ(ε) = inf + A − e^{ε−εₖ}·C.
	ed := math.Exp(-d)
	A, C := 0.0, 0.0
	for k := len(x.p) - 1; k >= 0; k-- {
		A += x.p[k]
		if k < len(x.p)-1 {
			C = x.p[k] + ed*C
		} else {
			C = x.p[k]
		}
		if C == 0 {
			continue
		}
		epsK := float64(x.lo+k) * d
		// δ at ε_{k−1}: inf + A − e^{−Δ}C.
		if x.inf+A-ed*C > delta || k == 0 {
			// The crossing lies in [ε_{k−1}, ε_k] (or below ε_0 for k = 0,
			// where the same formula holds for all ε < ε_0).
			return max(epsK+math.Log((x.inf+A-delta)/C), 0)
		}
	}
	return 0
}

// fftSize returns the smallest 2^a·3^b·5^c ≥ n that gonum's real FFT
// supports. Its plan (fftpack's rffti1) records the factors of n in a
// 15-int array after n and their count, so at most fftMaxFactors factors fit;
// it takes factors of 4 first, then a 2, then 3s and 5s, so 2^a·3^b·5^c has
// ⌈a/2⌉+b+c of them. A size with more (2·3¹³ has 14) indexes past the array
// and panics: such sizes are skipped. Powers of two up to 2^26 always fit,
// above any grid maxPLDGrid allows.
func fftSize(n int) int {
	best := 1
	for best < n {
		best *= 2
	}
	for p3, b := 1, 0; p3 < best; p3, b = p3*3, b+1 {
		for p35, c := p3, 0; p35 < best; p35, c = p35*5, c+1 {
			m, a := p35, 0
			for m < n {
				m *= 2
				a++
			}
			if (a+1)/2+b+c <= fftMaxFactors {
				best = min(best, m)
			}
		}
	}
	return best
}

// fftMaxFactors is the most factors gonum's fourier.FFT plan holds
// (dsp/fourier: ifac [15]int, two of them taken by n and the count).
const fftMaxFactors = 13

// chernoffLambdas are the exponents over which the Chernoff bounds are taken.
var chernoffLambdas = []float64{0.5, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 1024}

// logMGF returns K(l) = log Σ pᵢ e^{l·εᵢ} of the finite part of x, shifted by
// its largest exponent (at the top for l > 0, the bottom for l < 0); the
// powers of e^{−|l|Δ} are taken by a recurrence (relative error ≲ n·1e-16,
// covered by the halved beta of the callers). −Inf for no mass.
func logMGF(x pldDist, l, d float64) float64 {
	n := len(x.p)
	r := math.Exp(-math.Abs(l) * d)
	s, f := 0.0, 1.0
	var m float64
	if l > 0 {
		m = l * float64(x.lo+n-1) * d
		for i := n - 1; i >= 0 && f > 0; i-- {
			s += x.p[i] * f
			f *= r
		}
	} else {
		m = l * float64(x.lo) * d
		for i := 0; i < n && f > 0; i++ {
			s += x.p[i] * f
			f *= r
		}
	}
	if !(s > 0) {
		return math.Inf(-1)
	}
	return m + math.Log(s)
}

// chernoffWindow returns grid indices [lo, hi] such that the sum of
// counts[i] independent draws from the finite part of each parts[i] lies
// below lo, or above hi, with mass at most beta each (Chernoff bounds: for
// l > 0, mass{S ≥ v} ≤ exp(Σ cᵢKᵢ(l) − l·v); likewise for l < 0).
func chernoffWindow(parts []pldDist, counts []int, d, beta float64) (lo, hi int) {
	return chernoffWindowOver(parts, counts, d, beta, chernoffLambdas)
}

// chernoffWindowOver is chernoffWindow over the given exponents.
func chernoffWindowOver(parts []pldDist, counts []int, d, beta float64, lambdas []float64) (lo, hi int) {
	for i, x := range parts {
		lo += counts[i] * x.lo
		hi += counts[i] * (x.lo + len(x.p) - 1)
	}
	minIdx, maxIdx := lo, hi
	logBeta := math.Log(beta)
	for _, lam := range lambdas {
		for _, l := range []float64{lam, -lam} {
			K := 0.0
			for i, x := range parts {
				K += float64(counts[i]) * logMGF(x, l, d)
			}
			if math.IsInf(K, -1) || math.IsNaN(K) {
				continue
			}
			v := (K - logBeta) / l
			if l > 0 {
				if idx := int(math.Ceil(v / d)); idx < hi {
					hi = max(idx, minIdx)
				}
			} else {
				if idx := int(math.Floor(v / d)); idx > lo {
					lo = min(idx, maxIdx)
				}
			}
		}
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// productCompose returns the composition of counts[i] copies of each
// parts[i] by one FFT per part, a product of powers in the frequency domain
// and one inverse FFT over a window that holds all but 2·beta of the mass
// (Chernoff). The mass outside the window is added to inf: the circular
// convolution folds it into the window, where it can only raise δ, and
// adding its bound to inf covers its true contribution.
func productCompose(parts []pldDist, counts []int, d, beta float64) pldDist {
	keep := 1.0
	base, full := 0, 0
	for i, x := range parts {
		if x.over {
			return pldDist{over: true}
		}
		keep *= math.Exp(float64(counts[i]) * math.Log1p(-x.inf))
		base += counts[i] * x.lo
		full += counts[i] * (len(x.p) - 1)
		if len(x.p) == 0 {
			return pldDist{inf: min(1-keep, 1)}
		}
	}
	inf := 1 - keep
	lo, hi := chernoffWindow(parts, counts, d, beta/4)
	width := hi - lo + 1
	if width > maxPLDGrid {
		return pldDist{over: true}
	}
	n := fftSize(width)
	for _, x := range parts {
		if len(x.p) > maxPLDGrid {
			return pldDist{over: true}
		}
	}
	f := getFFT(n)
	defer putFFT(n, f)
	buf := make([]float64, n)
	acc := make([]complex128, n/2+1)
	c := make([]complex128, n/2+1)
	for i, x := range parts {
		clear(buf)
		for j, v := range x.p { // fold the masses modulo n
			buf[j%n] += v
		}
		f.Coefficients(c, buf)
		if i == 0 {
			for k, v := range c {
				acc[k] = cpow(v, counts[i])
			}
			continue
		}
		for k, v := range c {
			acc[k] *= cpow(v, counts[i])
		}
	}
	f.Sequence(buf, acc)
	out := make([]float64, width)
	scale := 1 / float64(n)
	neg := 0.0
	for a := lo; a <= hi; a++ {
		m := (a - base) % n
		if m < 0 {
			m += n
		}
		if v := buf[m] * scale; v > 0 {
			out[a-lo] = v
		} else {
			neg -= v
		}
	}
	inf += roundOffAllowance * neg
	if lo > base {
		inf += beta / 2
	}
	if hi < base+full {
		inf += beta / 2
	}
	return trimDist(pldDist{lo: lo, p: out, inf: min(inf, 1)})
}

// selfCompose returns the PLD of t independent copies of x (productCompose).
func selfCompose(x pldDist, t int, d, beta float64) pldDist {
	if t == 1 || len(x.p) == 0 || x.over {
		return x
	}
	return productCompose([]pldDist{x}, []int{t}, d, beta)
}

// roundOffAllowance: the FFT's round-off makes masses that should be tiny
// come out slightly negative (they are set to zero) or slightly positive, in
// about equal measure; this many times the total of the negative ones is
// added to the mass at +∞ as an allowance for the positive errors that were
// lost elsewhere. It is an estimate, not a proven bound (dp_accounting keeps
// none); it is of order 1e-13, far below any δ of interest.
const roundOffAllowance = 2

// cpow returns cᵗ by repeated squaring.
func cpow(c complex128, t int) complex128 {
	r := complex(1, 0)
	for t > 0 {
		if t&1 == 1 {
			r *= c
		}
		t >>= 1
		if t > 0 {
			c *= c
		}
	}
	if cmplx.IsNaN(r) {
		return 0
	}
	return r
}

// compose returns the PLD of x and y composed (their convolution), with at
// most beta of mass truncated from each tail: the lower tail is moved up to
// the lowest kept point and the upper tail to +∞, both pessimistic.
func compose(x, y pldDist, beta float64) pldDist {
	if x.over || y.over || len(x.p)+len(y.p) > maxPLDGrid {
		return pldDist{over: true}
	}
	inf := 1 - (1-x.inf)*(1-y.inf)
	if len(x.p) == 0 || len(y.p) == 0 {
		return pldDist{inf: min(inf, 1)}
	}
	m := len(x.p) + len(y.p) - 1
	var out []float64
	if min(len(x.p), len(y.p)) <= 64 {
		out = make([]float64, m)
		for i, u := range x.p {
			if u == 0 {
				continue
			}
			for j, v := range y.p {
				out[i+j] += u * v
			}
		}
	} else {
		n := fftSize(m)
		f := getFFT(n)
		defer putFFT(n, f)
		bx := make([]float64, n)
		copy(bx, x.p)
		by := make([]float64, n)
		copy(by, y.p)
		cx := f.Coefficients(nil, bx)
		cy := f.Coefficients(nil, by)
		for i := range cx {
			cx[i] *= cy[i]
		}
		f.Sequence(bx, cx)
		out = bx[:m]
		scale := 1 / float64(n)
		neg := 0.0
		for i, v := range out {
			if v < 0 {
				neg -= v * scale
			}
			out[i] = max(v*scale, 0)
		}
		inf += roundOffAllowance * neg
	}
	return truncateTails(pldDist{lo: x.lo + y.lo, p: out, inf: min(inf, 1)}, beta)
}

// truncateTails moves at most beta of lower-tail mass up to the lowest kept
// point and adds at most beta of upper-tail mass to inf.
func truncateTails(x pldDist, beta float64) pldDist {
	i, s := 0, 0.0
	for i < len(x.p)-1 && s+x.p[i] <= beta {
		s += x.p[i]
		i++
	}
	if i > 0 {
		x.p[i] += s
		x.p = x.p[i:]
		x.lo += i
	}
	j, s := len(x.p), 0.0
	for j > 1 && s+x.p[j-1] <= beta {
		s += x.p[j-1]
		j--
	}
	x.p = x.p[:j]
	x.inf = min(x.inf+s, 1)
	return trimDist(x)
}

// FFT plans (twiddle factors) are costly to build; they are kept per size.
// A plan holds work space, so each is used by one goroutine at a time.
var fftPlans sync.Map // int → *sync.Pool of *fourier.FFT

func getFFT(n int) *fourier.FFT {
	p, _ := fftPlans.LoadOrStore(n, &sync.Pool{New: func() any { return fourier.NewFFT(n) }})
	return p.(*sync.Pool).Get().(*fourier.FFT)
}

func putFFT(n int, f *fourier.FFT) {
	if p, ok := fftPlans.Load(n); ok {
		p.(*sync.Pool).Put(f)
	}
}
