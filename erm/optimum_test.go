package erm

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/erm/data"
)

// TestOptimumRidgeClosedForm compares the ridge optimum of each method
// sequence smoothOptimum runs with the normal equations
// (XᵀX/n + λI) w = Xᵀy/n. Newton ends exact to rounding; L-BFGS alone stops
// with a certificate g that bounds ‖w − w*‖ by √(2g/λ) (strong convexity),
// the tolerance it gets.
func TestOptimumRidgeClosedForm(t *testing.T) {
	for _, c := range []struct {
		name          string
		d             int
		lbfgs, newton bool
	}{
		{"Newton", 8, false, true},
		{"L-BFGS then Newton", 80, true, true},
		{"L-BFGS", 80, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := normalizedProblem(t, Squared{}, 500, c.d, 0.01, 1)
			o, err := smoothOptimum(p, c.lbfgs, c.newton)
			if err != nil {
				t.Fatal(err)
			}
			if o.Gap > 1e-11 {
				t.Errorf("certificate %v", o.Gap)
			}
			tol := 1e-9
			if !c.newton {
				tol = math.Sqrt(2*o.Gap/p.Lambda) + 1e-12
			}
			w := ridgeSolve(p, 0)
			for j := range w {
				if math.Abs(o.X[j]-w[j]) > tol*(1+math.Abs(w[j])) {
					t.Fatalf("w[%d] = %v, closed form %v", j, o.X[j], w[j])
				}
			}
		})
	}
}

// ridgeSolve returns (XᵀX/n + (λ+extra)I)⁻¹ Xᵀy/n.
func ridgeSolve(p *Problem, extra float64) []float64 {
	n, d := p.Len(), p.Dim()
	var a mat.Dense
	a.Mul(p.Data.X.T(), p.Data.X)
	a.Scale(1/float64(n), &a)
	for j := range d {
		a.Set(j, j, a.At(j, j)+p.Lambda+extra)
	}
	var b mat.VecDense
	b.MulVec(p.Data.X.T(), mat.NewVecDense(n, p.Data.Y))
	b.ScaleVec(1/float64(n), &b)
	var w mat.VecDense
	if err := w.SolveVec(&a, &b); err != nil {
		panic(err)
	}
	return w.RawVector().Data
}

// TestOptimumLogisticTwoWays solves the same logistic problem with
// FindOptimum's choice of gonum/optimize methods for 6 and 60 features and,
// with an inactive ball constraint, by projected FISTA certified by the
// Frank–Wolfe gap.
func TestOptimumLogisticTwoWays(t *testing.T) {
	for _, c := range []struct {
		d      int
		method string
	}{{6, "Newton"}, {60, "L-BFGS then Newton"}} {
		p := normalizedProblem(t, Logistic{}, 800, c.d, 0.02, 2)
		o := mustOptimum(t, p)
		if !strings.HasPrefix(o.Method, c.method) {
			t.Errorf("d = %d: method %q, want %s", c.d, o.Method, c.method)
		}
		q := *p
		q.Radius = 100 * floats.Norm(o.X, 2)
		o2 := mustOptimum(t, &q)
		if math.Abs(o.Value-o2.Value) > 1e-11 {
			t.Errorf("d = %d: %s F* = %.15g, projected FISTA %.15g", c.d, o.Method, o.Value, o2.Value)
		}
	}
}

// TestOptimumLassoOrthogonal uses an orthogonal design (XᵀX/n = I), where
// the L1+L2 problem has the closed form w_j = soft(b_j, λ₁)/(1 + λ), b = Xᵀy/n.
func TestOptimumLassoOrthogonal(t *testing.T) {
	x := mat.NewDense(4, 2, []float64{1, 1, 1, -1, -1, 1, -1, -1})
	y := []float64{2, 0.5, -1, 0.1}
	p := &Problem{Data: &data.Dataset{X: x, Y: y}, Loss: Squared{}, Lambda: 0.1, L1: 0.3}
	o := mustOptimum(t, p)
	want := make([]float64, 2)
	for j := range 2 {
		var b float64
		for i := range 4 {
			b += x.At(i, j) * y[i] / 4
		}
		want[j] = math.Copysign(max(math.Abs(b)-0.3, 0), b) / 1.1
		// F is 1.1-strongly convex, so a certified gap g bounds |w − w*| by √(2g/1.1).
		if math.Abs(o.X[j]-want[j]) > 1e-6 {
			t.Errorf("w[%d] = %v, closed form %v", j, o.X[j], want[j])
		}
	}
	if fw := p.Value(want); o.Value-fw > 1e-12 || o.Value < fw-1e-15 {
		t.Errorf("F = %.16g, closed form F* = %.16g", o.Value, fw)
	}
}

// TestOptimumBallRidge checks the constrained ridge optimum against the
// Lagrangian solution w(μ) = (XᵀX/n + (λ+μ)I)⁻¹Xᵀy/n with ‖w(μ)‖ = R, μ found
// by bisection.
func TestOptimumBallRidge(t *testing.T) {
	p := normalizedProblem(t, Squared{}, 300, 5, 0.001, 3)
	free := ridgeSolve(p, 0)
	p.Radius = 0.5 * floats.Norm(free, 2)
	o := mustOptimum(t, p)
	lo, hi := 0.0, 1.0
	for floats.Norm(ridgeSolve(p, hi), 2) > p.Radius {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if floats.Norm(ridgeSolve(p, mid), 2) > p.Radius {
			lo = mid
		} else {
			hi = mid
		}
	}
	w := ridgeSolve(p, hi)
	if math.Abs(p.Value(w)-o.Value) > 1e-10 {
		t.Errorf("F at the Lagrangian solution %.15g, FindOptimum %.15g", p.Value(w), o.Value)
	}
	for j := range w {
		if math.Abs(w[j]-o.X[j]) > 1e-6 {
			t.Errorf("w[%d] = %v, Lagrangian %v", j, o.X[j], w[j])
		}
	}
}

// TestOptimumHingeDualityGap checks the SVM optimum's certificate and that
// no random perturbation of it does better.
func TestOptimumHingeDualityGap(t *testing.T) {
	p := normalizedProblem(t, Hinge{}, 400, 5, 0.01, 4)
	o := mustOptimum(t, p)
	if o.Gap > 1e-10*o.Value {
		t.Errorf("duality gap %v", o.Gap)
	}
	rng := NewNoise(5)
	x := make([]float64, 5)
	for range 200 {
		for j := range x {
			x[j] = o.X[j] + 1e-3*rng.NormFloat64()
		}
		if v := p.Value(x); v < o.Value-1e-12 {
			t.Fatalf("perturbation improves F: %v < %v", v, o.Value)
		}
	}
}

func TestOptimumErrors(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 50, 3, 0, 1)
	if _, err := FindOptimum(p); err == nil {
		t.Error("Lambda = 0 accepted without a constraint")
	}
	p = normalizedProblem(t, Hinge{}, 50, 3, 0.1, 1)
	p.L1 = 0.1
	if _, err := FindOptimum(p); err == nil {
		t.Error("hinge + L1 accepted")
	}
	// Labels this large overflow F at the origin: gonum/optimize rejects the
	// start, which must come back as an error, not a panic.
	p = normalizedProblem(t, Squared{}, 50, 3, 0.1, 1)
	p.Data.Y[0] = 1e300
	if _, err := FindOptimum(p); !errors.Is(err, ErrInvalid) {
		t.Errorf("overflowing F: error %v, want ErrInvalid", err)
	}
}
