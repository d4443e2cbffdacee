package erm

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/floats"
)

// DP-AccMD on the L1 ball C = {‖x‖₁ ≤ R} (AccMD.L1Radius = R), the case the
// paper's Section 5 is written for ("such as the l1-norm ball"), which it
// leaves without a mirror map or a way to compute either argmin. Here:
//
//   - Norms: ‖v‖_C = ‖v‖₁/R, ‖C‖₂ = 2R (the L2 diameter), so as on the L2
//     ball L' = L‖C‖₂² = 4LR² (Lemma 5.1) and α_{k+1} = (k+2)/(4L').
//   - Mirror map: the p-norm potential w(z) = (κ/2)‖z‖_q² with
//     q = 1 + 1/ln d (q = 2 for d ≤ 2), the standard choice for the L1
//     geometry (Nemirovski–Yudin; Ben-Tal, Margalit & Nemirovski). ½‖z‖_q²
//     is (q−1)-strongly convex in ‖·‖_q and ‖v‖_q ≥ d^{1/q−1}‖v‖₁, so
//     κ = d^{2−2/q}/((q−1)R²) (= e^{2/q} ln d / R² at q = 1 + 1/ln d) makes
//     w 1-strongly convex in ‖·‖_C, as Algorithm 3 requires.
//   - z-step: argmin_{z∈C} B_w(z, z_k) + α<g, z>, i.e. minimise
//     w(z) − <θ, z> over C with θ = ∇w(z_k) − α g. Its KKT conditions give
//     z = ∇w*(soft(θ, ν)) (w* = ‖·‖_p²/(2κ), 1/p + 1/q = 1, soft the
//     soft-threshold), with ν ≥ 0 the smallest value putting z in C; ‖z(ν)‖₁
//     does not increase with ν (z(ν) minimises w − <θ,·> + ν‖·‖₁), so ν is
//     found by bisection. mirrorStepL1.
//   - y-step: the paper's argmin_{y∈C} (L'/2)‖y − x‖_C² + <g, y> is an
//     L1-squared prox over the ball with no closed form; it is replaced by
//     the Euclidean step y = Proj_C(x − g/(4L)), which minimises
//     2L‖y − x‖₂² + <g, y> over C. Since ‖·‖₂ ≤ ‖·‖₁ = R‖·‖_C, that model lies
//     below the paper's pointwise (and above F's own L-smooth model), so it
//     decreases F by at least the paper's progress term Prog(x), the only
//     property of the gradient step the linear-coupling analysis uses.
//   - Noise and privacy: unchanged from the L2 ball (one Gaussian release of
//     the full gradient per iteration, sensitivity 2G/n, zCDP calibration).

// l1Mirror is the p-norm mirror map w(z) = (κ/2)‖z‖_q² for the L1 ball of
// radius r in dimension d.
type l1Mirror struct {
	q, p, kappa, r float64
}

func newL1Mirror(d int, r float64) l1Mirror {
	q := 2.0
	if d > 2 {
		q = min(2, 1+1/math.Log(float64(d)))
	}
	kappa := math.Pow(float64(d), 2-2/q) / ((q - 1) * r * r)
	return l1Mirror{q: q, p: q / (q - 1), kappa: kappa, r: r}
}

// value returns w(z).
func (m l1Mirror) value(z []float64) float64 {
	n := pNorm(z, m.q)
	return m.kappa / 2 * n * n
}

// grad writes ∇w(z)_j = κ‖z‖_q^{2−q} sign(z_j)|z_j|^{q−1} into dst.
func (m l1Mirror) grad(dst, z []float64) {
	n := pNorm(z, m.q)
	if n == 0 {
		clear(dst)
		return
	}
	for j, v := range z {
		dst[j] = m.kappa * math.Copysign(math.Pow(math.Abs(v)/n, m.q-1), v) * n
	}
}

// gradConj writes ∇w*(θ)_j = sign(θ_j)|θ_j|^{p−1}‖θ‖_p^{2−p}/κ into dst, the
// inverse of grad. Both are homogeneous of degree one, so the powers are
// taken of θ/‖θ‖_p, which keeps them in range for large p.
func (m l1Mirror) gradConj(dst, theta []float64) {
	n := pNorm(theta, m.p)
	if n == 0 {
		clear(dst)
		return
	}
	for j, v := range theta {
		dst[j] = math.Copysign(math.Pow(math.Abs(v)/n, m.p-1), v) * n / m.kappa
	}
}

// pNorm returns ‖x‖_p, scaled by the largest entry against over- and
// underflow.
func pNorm(x []float64, p float64) float64 {
	s := floats.Norm(x, math.Inf(1))
	if s == 0 {
		return 0
	}
	var sum float64
	for _, v := range x {
		sum += math.Pow(math.Abs(v)/s, p)
	}
	return s * math.Pow(sum, 1/p)
}

// mirrorStepL1 writes into z the minimiser of w(z) − <θ, z> over the L1 ball
// of radius m.r (see the file comment); u is scratch of the same length.
func (m l1Mirror) mirrorStepL1(z, theta, u []float64) {
	m.gradConj(z, theta)
	if floats.Norm(z, 1) <= m.r {
		return
	}
	at := func(nu float64) float64 {
		for j, v := range theta {
			u[j] = math.Copysign(max(math.Abs(v)-nu, 0), v)
		}
		m.gradConj(z, u)
		return floats.Norm(z, 1)
	}
	lo, hi := 0.0, floats.Norm(theta, math.Inf(1)) // ‖z(hi)‖₁ = 0 ≤ r < ‖z(lo)‖₁
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if at(mid) > m.r {
			lo = mid
		} else {
			hi = mid
		}
	}
	if s := at(hi); s > m.r { // rounding: never leave the ball
		floats.Scale(m.r/s, z)
	}
}

// ProjectL1Ball replaces x by its Euclidean projection onto {‖x‖₁ ≤ r}
// (r > 0): the soft-threshold soft(x, τ) with τ ≥ 0 the smallest value that
// puts it in the ball, τ found by sorting |x| (Duchi, Shalev-Shwartz, Singer
// & Chandra, 2008).
func ProjectL1Ball(x []float64, r float64) {
	if floats.Norm(x, 1) <= r {
		return
	}
	a := make([]float64, len(x))
	for j, v := range x {
		a[j] = math.Abs(v)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(a)))
	var cum, tau float64
	for k, v := range a {
		cum += v
		if t := (cum - r) / float64(k+1); v > t {
			tau = t
		} else {
			break
		}
	}
	for j, v := range x {
		x[j] = math.Copysign(max(math.Abs(v)-tau, 0), v)
	}
	if s := floats.Norm(x, 1); s > r { // rounding
		floats.Scale(r/s, x)
	}
}

// l1Ball is the L1 ball ‖x‖₁ ≤ R with the p-norm mirror map (mir): the y-step
// projects onto the ball, the z-step is the exact Bregman step with
// α_{k+1} = (k+2)/(4L‖C‖₂²), ‖C‖₂ = 2R.
type l1Ball struct {
	mir            l1Mirror
	R, Lc          float64
	theta, scratch []float64
}

func newL1Ball(d int, R, L float64) *l1Ball {
	return &l1Ball{mir: newL1Mirror(d, R), R: R, Lc: 4 * L * R * R, // L‖C‖₂², ‖C‖₂ = 2R
		theta: make([]float64, d), scratch: make([]float64, d)}
}

func (b *l1Ball) project(y []float64) { ProjectL1Ball(y, b.R) }

func (b *l1Ball) zStep(z, g []float64, k int) {
	alpha := float64(k+2) / (4 * b.Lc)
	b.mir.grad(b.theta, z)
	floats.AddScaled(b.theta, -alpha, g)
	b.mir.mirrorStepL1(z, b.theta, b.scratch)
}

func (b *l1Ball) describe() string {
	return fmt.Sprintf("; L1 ball ‖x‖₁ ≤ %g, p-norm mirror map q = %.4g", b.R, b.mir.q)
}

// L1BallOptimum minimises p over {‖x‖₁ ≤ r} by projected FISTA with restart
// and certifies the result by the Frank–Wolfe gap
// <∇F(x), x> + r‖∇F(x)‖_∞ ≥ F(x) − min_C F. p must have a smooth loss, no
// L1 term and no L2-ball Radius. It fails if the certificate does not reach
// FindOptimum's tolerance.
func L1BallOptimum(p *Problem, r float64) (*Optimum, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if !(r > 0) || math.IsInf(r, 1) {
		return nil, fmt.Errorf("erm: L1-ball radius %v: must be a finite number > 0: %w", r, ErrInvalid)
	}
	if math.IsInf(p.Loss.Smoothness(), 1) || p.L1 != 0 || p.Radius != 0 {
		return nil, fmt.Errorf("erm: the L1-ball optimum needs a smooth loss, no L1 term and no L2 ball: %w", ErrUnsupported)
	}
	cert := func(x, g []float64) float64 {
		return max(floats.Dot(g, x)+r*floats.Norm(g, math.Inf(1)), 0)
	}
	x, gap := fista(p, make([]float64, p.Dim()), 1/p.Smoothness(), func(x []float64) { ProjectL1Ball(x, r) }, cert)
	o := &Optimum{X: x, Value: p.Value(x), Gap: gap, Method: "projected FISTA on the L1 ball with restart, certified by the Frank–Wolfe gap"}
	if !(o.Gap <= optimumTolerance*max(1, math.Abs(o.Value))) {
		return o, fmt.Errorf("erm: %s stopped with certified gap %.3g at F = %.12g, above the tolerance: %w", o.Method, o.Gap, o.Value, ErrNoConvergence)
	}
	return o, nil
}
