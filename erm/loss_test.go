package erm

import (
	"math"
	"testing"
)

var allLosses = []Loss{Logistic{}, Squared{}, Hinge{}}

// TestLossDerivatives compares Deriv and Deriv2 with central differences
// (away from the hinge's kink).
func TestLossDerivatives(t *testing.T) {
	for _, l := range allLosses {
		for _, y := range []float64{-1, 1} {
			for _, z := range []float64{-3.1, -0.4, 0.2, 0.9, 2.7, 40} {
				const h = 1e-5
				fd := (l.Value(z+h, y) - l.Value(z-h, y)) / (2 * h)
				if math.Abs(fd-l.Deriv(z, y)) > 1e-7*(1+math.Abs(fd)) {
					t.Errorf("%s y=%v z=%v: Deriv %v, finite difference %v", l.Name(), y, z, l.Deriv(z, y), fd)
				}
				fd2 := (l.Deriv(z+h, y) - l.Deriv(z-h, y)) / (2 * h)
				if math.Abs(fd2-l.Deriv2(z, y)) > 1e-6 {
					t.Errorf("%s y=%v z=%v: Deriv2 %v, finite difference %v", l.Name(), y, z, l.Deriv2(z, y), fd2)
				}
				if d := math.Abs(l.Deriv(z, y)); d > l.Lipschitz() {
					t.Errorf("%s: |l'| = %v above Lipschitz %v", l.Name(), d, l.Lipschitz())
				}
				if d := l.Deriv2(z, y); d > l.Smoothness() {
					t.Errorf("%s: l'' = %v above smoothness %v", l.Name(), d, l.Smoothness())
				}
			}
		}
	}
	if v := (Logistic{}).Value(-800, 1); math.Abs(v-800) > 1e-9 {
		t.Errorf("logistic loss overflows: %v", v)
	}
}

// TestNegConjugate checks l*(−a) = sup_z (−a z − l(z)) against a brute-force
// maximisation over a fine grid of z (the supremum is attained inside it for
// these a).
func TestNegConjugate(t *testing.T) {
	for _, l := range allLosses {
		dl := l.(dualLoss)
		for _, y := range []float64{-1, 1} {
			for _, s := range []float64{0.05, 0.3, 0.5, 0.8, 0.97} { // y·a inside the domain
				a := y * s
				if _, ok := l.(Squared); ok {
					a = 3*s - 1
				}
				best := math.Inf(-1)
				for k := -400000; k <= 400000; k++ {
					z := float64(k) * 1e-4
					best = max(best, -a*z-l.Value(z, y))
				}
				if got := dl.negConjugate(a, y); math.Abs(got-best) > 1e-6 {
					t.Errorf("%s y=%v a=%v: l*(−a) = %v, brute force %v", l.Name(), y, a, got, best)
				}
			}
		}
	}
}

// TestDualStepMinimisesSubproblem checks each closed-form or Newton
// coordinate step against a brute-force minimisation of the DP-SCD
// subproblem (8) (times N): h(ζ) = l*(−(a+ζ)) + m ζ + (s/2) ζ², by golden
// section on the feasible interval.
func TestDualStepMinimisesSubproblem(t *testing.T) {
	for _, l := range allLosses {
		dl := l.(dualLoss)
		for _, y := range []float64{-1, 1} {
			for _, a := range []float64{0.3 * y, 0.9 * y, 0.01 * y, -0.2, 1.4} {
				for _, m := range []float64{-2, -0.1, 0.4, 3} {
					for _, s := range []float64{0.01, 0.5, 4} {
						h := func(z float64) float64 { return dl.negConjugate(a+z, y) + m*z + 0.5*s*z*z }
						lo, hi := -20.0, 20.0
						if _, ok := l.(Squared); !ok { // y(a+ζ) ∈ [0,1]
							lo, hi = math.Min(-a, y-a), math.Max(-a, y-a)
						}
						want := goldenSection(h, lo, hi)
						got := dl.dualStep(a, y, m, s, 1e-12, 0)
						hg, hw := h(got), h(want)
						if hg > hw+1e-9 || math.Abs(got-want) > 1e-5 {
							t.Errorf("%s y=%v a=%v m=%v s=%v: ζ = %v (h %v), brute force %v (h %v)", l.Name(), y, a, m, s, got, hg, want, hw)
						}
					}
				}
			}
		}
	}
}

// TestRidgeStepIsAuthorsFormula checks the squared loss's step against the
// DP-SCD authors' ridge update written in the paper's variables:
// ζ = (y − xᵀθ − α)/(1 + L‖x‖²/(λN)), θ = v/(λN).
func TestRidgeStepIsAuthorsFormula(t *testing.T) {
	x := []float64{0.6, -0.8}
	v := []float64{3, 1}
	const alpha, y, lam, N, L = 0.2, 1.5, 0.01, 500.0, 10.0
	theta0 := v[0] / (lam * N)
	theta1 := v[1] / (lam * N)
	want := (y - (x[0]*theta0 + x[1]*theta1) - alpha) / (1 + L*(x[0]*x[0]+x[1]*x[1])/(lam*N))
	got := Squared{}.dualStep(alpha, y, x[0]*theta0+x[1]*theta1, L/(lam*N), 0, 0)
	if math.Abs(got-want) > 1e-15 {
		t.Errorf("ridge ζ = %v, want %v", got, want)
	}
}

// TestLogisticOneNewtonStep checks the one-step mode against the authors'
// d1/d2 formulas (digest §5.2).
func TestLogisticOneNewtonStep(t *testing.T) {
	const y, alpha, m, s, box = -1.0, -0.3, 0.7, 0.2, 1e-4
	d1 := -y*math.Log(1-y*alpha) + y*math.Log(y*alpha) + m
	d2 := -1/(alpha*(alpha-y)) + s
	want := -d1 / d2
	if got := (Logistic{}).dualStep(alpha, y, m, s, box, 1); math.Abs(got-want) > 1e-14 {
		t.Errorf("one Newton step ζ = %v, want −d1/d2 = %v", got, want)
	}
}

// goldenSection minimises a unimodal f on [lo, hi].
func goldenSection(f func(float64) float64, lo, hi float64) float64 {
	g := (math.Sqrt(5) - 1) / 2
	a, b := lo, hi
	c, d := b-g*(b-a), a+g*(b-a)
	for range 300 {
		if f(c) < f(d) {
			b = d
		} else {
			a = c
		}
		c, d = b-g*(b-a), a+g*(b-a)
	}
	return (a + b) / 2
}
