package erm

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// projectL1Oracle projects onto the L1 ball by bisection on the threshold τ
// of soft(x, τ) (the KKT form of the projection), independently of the
// sort-based ProjectL1Ball.
func projectL1Oracle(x []float64, r float64) []float64 {
	out := append([]float64(nil), x...)
	if floats.Norm(x, 1) <= r {
		return out
	}
	sum := func(tau float64) float64 {
		var s float64
		for _, v := range x {
			s += max(math.Abs(v)-tau, 0)
		}
		return s
	}
	lo, hi := 0.0, floats.Norm(x, math.Inf(1))
	for range 300 {
		mid := (lo + hi) / 2
		if sum(mid) > r {
			lo = mid
		} else {
			hi = mid
		}
	}
	for j, v := range x {
		out[j] = math.Copysign(max(math.Abs(v)-hi, 0), v)
	}
	return out
}

func TestProjectL1BallHandCases(t *testing.T) {
	for _, c := range []struct {
		x    []float64
		r    float64
		want []float64
	}{
		{[]float64{3, 1}, 2, []float64{2, 0}},             // τ = 1
		{[]float64{1, 1}, 1, []float64{0.5, 0.5}},         // τ = 0.5
		{[]float64{-2, 0.5, 0.2}, 1, []float64{-1, 0, 0}}, // τ = 1
		{[]float64{0.2, -0.3}, 1, []float64{0.2, -0.3}},   // inside: unchanged
		{[]float64{1, -1, 1, -1}, 2, []float64{0.5, -0.5, 0.5, -0.5}},
	} {
		got := append([]float64(nil), c.x...)
		ProjectL1Ball(got, c.r)
		for j := range got {
			if math.Abs(got[j]-c.want[j]) > 1e-12 {
				t.Errorf("Proj(%v, %v) = %v, want %v", c.x, c.r, got, c.want)
				break
			}
		}
	}
}

// TestProjectL1BallOracle compares with the bisection oracle and checks the
// variational inequality <x − P(x), y − P(x)> ≤ 0 for feasible y, which
// characterises the Euclidean projection.
func TestProjectL1BallOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		d := 1 + rng.IntN(30)
		r := 0.1 + 3*rng.Float64()
		x := make([]float64, d)
		for j := range x {
			x[j] = 3 * rng.NormFloat64()
		}
		got := append([]float64(nil), x...)
		ProjectL1Ball(got, r)
		want := projectL1Oracle(x, r)
		for j := range got {
			if math.Abs(got[j]-want[j]) > 1e-9 {
				t.Fatalf("trial %d: Proj = %v, oracle %v", trial, got, want)
			}
		}
		if nrm := floats.Norm(got, 1); nrm > r*(1+1e-12) {
			t.Fatalf("trial %d: ‖P(x)‖₁ = %v > r = %v", trial, nrm, r)
		}
		for range 20 {
			y := make([]float64, d)
			for j := range y {
				y[j] = rng.NormFloat64()
			}
			ProjectL1Ball(y, r*rng.Float64())
			var vi float64
			for j := range y {
				vi += (x[j] - got[j]) * (y[j] - got[j])
			}
			if vi > 1e-9 {
				t.Fatalf("trial %d: variational inequality violated by %v", trial, vi)
			}
		}
	}
}

// TestL1MirrorStrongConvexity checks w is 1-strongly convex in ‖·‖_C =
// ‖·‖₁/R: B_w(a, b) ≥ ½‖a − b‖₁²/R² on random pairs, including sparse ones
// (where the p-norm bound is tightest), and that grad and gradConj are
// inverse maps.
func TestL1MirrorStrongConvexity(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, d := range []int{2, 3, 20, 500} {
		R := 0.5 + rng.Float64()
		m := newL1Mirror(d, R)
		if want := 1 + 1/math.Log(float64(d)); d > 2 && math.Abs(m.q-want) > 1e-15 {
			t.Errorf("d = %d: q = %v, want 1 + 1/ln d = %v", d, m.q, want)
		}
		ga, gb := make([]float64, d), make([]float64, d)
		back := make([]float64, d)
		for trial := range 200 {
			a, b := make([]float64, d), make([]float64, d)
			for j := range a {
				if trial%2 == 0 || rng.IntN(d) == 0 {
					a[j] = rng.NormFloat64()
					b[j] = rng.NormFloat64()
				}
			}
			m.grad(gb, b)
			diff := make([]float64, d)
			floats.SubTo(diff, a, b)
			breg := m.value(a) - m.value(b) - floats.Dot(gb, diff)
			want := 0.5 * math.Pow(floats.Norm(diff, 1)/R, 2)
			if breg < want*(1-1e-9) {
				t.Fatalf("d = %d: B_w = %v < ½‖a−b‖²_C = %v", d, breg, want)
			}
			m.grad(ga, a)
			m.gradConj(back, ga)
			for j := range a {
				if math.Abs(back[j]-a[j]) > 1e-9*(1+math.Abs(a[j])) {
					t.Fatalf("d = %d: ∇w*(∇w(a)) = %v, want %v", d, back, a)
				}
			}
		}
	}
}

// TestMirrorStepL1Optimal checks the z-step minimises Φ(z) = w(z) − <θ, z>
// over the L1 ball: feasible, Frank–Wolfe gap <∇Φ(z), z> + R‖∇Φ(z)‖_∞ ≈ 0
// (zero exactly at the constrained minimiser of a convex Φ), no random
// feasible point lower; and inside the ball ∇w(z) = θ.
func TestMirrorStepL1Optimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 200 {
		d := 2 + rng.IntN(25)
		R := 0.2 + rng.Float64()
		m := newL1Mirror(d, R)
		theta := make([]float64, d)
		scale := math.Pow(10, 3*rng.Float64()-1) * m.kappa * R
		for j := range theta {
			theta[j] = scale * rng.NormFloat64()
		}
		z, u, gz := make([]float64, d), make([]float64, d), make([]float64, d)
		m.mirrorStepL1(z, theta, u)
		if nrm := floats.Norm(z, 1); nrm > R*(1+1e-12) {
			t.Fatalf("trial %d: ‖z‖₁ = %v > R = %v", trial, nrm, R)
		}
		phi := func(v []float64) float64 { return m.value(v) - floats.Dot(theta, v) }
		m.grad(gz, z)
		floats.Sub(gz, theta) // ∇Φ(z)
		fw := floats.Dot(gz, z) + R*floats.Norm(gz, math.Inf(1))
		if fw > 1e-8*(1+math.Abs(phi(z))) {
			t.Fatalf("trial %d: Frank–Wolfe gap %v", trial, fw)
		}
		if floats.Norm(z, 1) < R*(1-1e-9) { // interior: the unconstrained minimiser
			m.grad(gz, z)
			for j := range gz {
				if math.Abs(gz[j]-theta[j]) > 1e-9*(1+math.Abs(theta[j])) {
					t.Fatalf("trial %d: interior z with ∇w(z) = %v ≠ θ = %v", trial, gz, theta)
				}
			}
		}
		for range 50 {
			y := make([]float64, d)
			for j := range y {
				y[j] = rng.NormFloat64()
			}
			ProjectL1Ball(y, R)
			if phi(y) < phi(z)-1e-9*(1+math.Abs(phi(z))) {
				t.Fatalf("trial %d: Φ(y) = %v < Φ(z) = %v", trial, phi(y), phi(z))
			}
		}
	}
}

// TestAccMDL1StaysInBall checks the released y_T is feasible, the budget is
// spent, and the L1 variant refuses bad settings.
func TestAccMDL1StaysInBall(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 300, 6, 0.01, 2)
	res, err := (&AccMD{Epsilon: 1, Delta: 1e-3, Iterations: 50, L1Radius: 0.3}).Solve(p, NewNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	if nrm := floats.Norm(res.X, 1); nrm > 0.3*(1+1e-12) {
		t.Errorf("‖y_T‖₁ = %v > 0.3", nrm)
	}
	if math.Abs(res.Epsilon-1) > 1e-9 || res.Delta != 1e-3 {
		t.Errorf("spent (%v, %v)", res.Epsilon, res.Delta)
	}
	ball := normalizedProblem(t, Logistic{}, 300, 6, 0.01, 2)
	ball.Radius = 1
	for name, c := range map[string]struct {
		p *Problem
		a *AccMD
	}{
		"negative radius": {p, &AccMD{Epsilon: 1, Delta: 1e-3, Iterations: 5, L1Radius: -1}},
		"infinite radius": {p, &AccMD{Epsilon: 1, Delta: 1e-3, Iterations: 5, L1Radius: math.Inf(1)}},
		"both balls":      {ball, &AccMD{Epsilon: 1, Delta: 1e-3, Iterations: 5, L1Radius: 1}},
		"T = 0":           {p, &AccMD{Epsilon: 1, Delta: 1e-3, L1Radius: 1}},
	} {
		if _, err := c.a.Solve(c.p, NewNoise(1)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestAccMDL1NoiseCalibration checks σ against the zCDP calibration computed
// here from its formula (digest §4.6: T Gaussian releases of sensitivity 2G/n
// are ρ-zCDP with ρ = 2TG²/(n²σ²), hence (ρ + 2√(ρ ln(1/δ)), δ)-DP; solved
// for ρ: √ρ = √(ln(1/δ) + ε) − √ln(1/δ)), and measures the noise actually
// added: with T = 1 and a ball too large to bind, y_1 = −(∇F(0) + b)/(4L).
func TestAccMDL1NoiseCalibration(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 300, 10, 0.01, 4)
	const eps, delta = 0.7, 1e-4
	G, err := p.Lipschitz()
	if err != nil {
		t.Fatal(err)
	}
	n := float64(p.Len())
	for _, T := range []int{1, 40} {
		ld := math.Log(1 / delta)
		sqrtRho := math.Sqrt(ld+eps) - math.Sqrt(ld)
		want := math.Sqrt(2*float64(T)*G*G/(n*n)) / sqrtRho
		res, err := (&AccMD{Epsilon: eps, Delta: delta, Iterations: T, L1Radius: 1e6}).Solve(p, NewNoise(3))
		if err != nil {
			t.Fatal(err)
		}
		got := calibrationSigma(t, res.Calibration)
		if math.Abs(got-want) > 1e-3*want {
			t.Errorf("T = %d: σ = %v, want %v from the zCDP formula", T, got, want)
		}
		if res.Epsilon > eps*(1+1e-9) || res.Epsilon < eps*(1-1e-6) {
			t.Errorf("T = %d: spent ε = %v, budget %v", T, res.Epsilon, eps)
		}
	}
	// The noise actually added, T = 1.
	sqrtRho := math.Sqrt(math.Log(1/delta)+eps) - math.Sqrt(math.Log(1/delta))
	want := math.Sqrt(2*G*G/(n*n)) / sqrtRho
	g0 := make([]float64, p.Dim())
	p.Gradient(g0, make([]float64, p.Dim()))
	L := p.Smoothness()
	var ss float64
	const runs = 2000
	for s := range runs {
		res, err := (&AccMD{Epsilon: eps, Delta: delta, Iterations: 1, L1Radius: 1e6}).Solve(p, NewNoise(uint64(100+s)))
		if err != nil {
			t.Fatal(err)
		}
		for j, y := range res.X {
			b := -4*L*y - g0[j]
			ss += b * b
		}
	}
	if got := math.Sqrt(ss / (runs * float64(p.Dim()))); math.Abs(got-want) > 0.03*want {
		t.Errorf("measured noise std %v, want σ = %v", got, want)
	}
}

func calibrationSigma(t *testing.T, s string) float64 {
	t.Helper()
	_, rest, ok := strings.Cut(s, "σ = ")
	if !ok {
		t.Fatalf("no σ in %q", s)
	}
	f, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// simplePGD is the test's own constrained solution: projected gradient
// descent with step 1/L and the bisection projection, many iterations.
func simplePGD(p *Problem, r float64, iters int) []float64 {
	x := make([]float64, p.Dim())
	g := make([]float64, p.Dim())
	eta := 1 / p.Smoothness()
	for range iters {
		p.Gradient(g, x)
		floats.AddScaled(x, -eta, g)
		x = projectL1Oracle(x, r)
	}
	return x
}

// TestAccMDL1NoiseOffConverges checks that without noise DP-AccMD on the L1
// ball reaches the constrained optimum of a problem whose constraint binds,
// as computed by plain projected gradient descent, that L1BallOptimum agrees
// with it, and that the error at T stays below the linear-coupling guarantee
// 4L'·B_w(x*, x_0)/T² (Allen-Zhu & Orecchia's constant, L' = L‖C‖₂² =
// 4LR², x_0 = 0 so B_w = w(x*)): a method without the mirror step (gradient
// steps only, O(1/T)) exceeds it by T = 300 on this problem.
func TestAccMDL1NoiseOffConverges(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 500, 20, 0, 6)
	const R = 5
	ref := simplePGD(p, R, 20000)
	if nrm := floats.Norm(ref, 1); nrm < R*(1-1e-6) {
		t.Fatalf("the constraint does not bind (‖x‖₁ = %v < %v): the test would not test it", nrm, R)
	}
	fRef := p.Value(ref)
	opt, err := L1BallOptimum(p, R)
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(opt.Value-fRef) / fRef; d > 1e-9 {
		t.Errorf("L1BallOptimum F = %v, projected gradient %v (relative %v)", opt.Value, fRef, d)
	}
	res, err := (&AccMD{Epsilon: math.Inf(1), Iterations: 3000, L1Radius: R}).Solve(p, NewNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	if gap := (p.Value(res.X) - fRef) / fRef; gap > 1e-6 {
		t.Errorf("noise-off DP-AccMD, T = 3000: relative gap %v to projected gradient's F = %v", gap, fRef)
	}
	m := newL1Mirror(p.Dim(), R)
	theta := 16 * p.Smoothness() * R * R * m.value(ref) // 4L'·w(x*)
	for _, T := range []int{30, 100, 300, 1000} {
		res, err := (&AccMD{Epsilon: math.Inf(1), Iterations: T, L1Radius: R}).Solve(p, NewNoise(1))
		if err != nil {
			t.Fatal(err)
		}
		if gap, bound := p.Value(res.X)-fRef, theta/float64(T*T); gap > bound {
			t.Errorf("T = %d: F(y_T) − F* = %v above the guarantee %v", T, gap, bound)
		}
	}
}
