package erm

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// TestLaplaceTraceSeesEveryIterate runs the six pure-DP methods with a
// Trace and checks that it sees t = 0, 1, …, Result.Iterations in order,
// starting at Start and ending at Result.X, and that tracing does not
// change the run (the same seed gives the same X without a Trace).
func TestLaplaceTraceSeesEveryIterate(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 400, 5, 0.02, 7)
	start := []float64{1, -1, 2, 0, 0.5}
	for _, c := range []struct {
		name  string
		build func(ls LaplaceSettings) Solver
	}{
		{"GD", func(ls LaplaceSettings) Solver { return &GD{LaplaceSettings: ls} }},
		{"HeavyBall", func(ls LaplaceSettings) Solver { return &HeavyBall{LaplaceSettings: ls} }},
		{"NAG", func(ls LaplaceSettings) Solver { return &NAG{LaplaceSettings: ls} }},
		{"NAG-opt", func(ls LaplaceSettings) Solver { return &NAG{LaplaceSettings: ls, Optimal: true} }},
		{"MASG", func(ls LaplaceSettings) Solver { return &MASG{LaplaceSettings: ls} }},
		{"MASG-opt", func(ls LaplaceSettings) Solver { return &MASG{LaplaceSettings: ls, Optimal: true} }},
	} {
		for _, m := range []int{0, 50} {
			ls := LaplaceSettings{Epsilon: 1, Iterations: 60, BatchSize: m, Start: start}
			plain, err := c.build(ls).Solve(p, NewNoise(3))
			if err != nil {
				t.Fatal(err)
			}
			var ts []int
			var xs [][]float64
			ls.Trace = func(t int, x []float64) { ts = append(ts, t); xs = append(xs, slices.Clone(x)) }
			traced, err := c.build(ls).Solve(p, NewNoise(3))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(traced.X, plain.X) {
				t.Errorf("%s m=%d: X with a Trace %v differs from X without %v", c.name, m, traced.X, plain.X)
			}
			if len(ts) != traced.Iterations+1 {
				t.Fatalf("%s m=%d: Trace called %d times, want Iterations+1 = %d", c.name, m, len(ts), traced.Iterations+1)
			}
			for i, ti := range ts {
				if ti != i {
					t.Fatalf("%s m=%d: call %d has t = %d", c.name, m, i, ti)
				}
			}
			if !slices.Equal(xs[0], start) {
				t.Errorf("%s m=%d: first traced iterate %v, want Start %v", c.name, m, xs[0], start)
			}
			if !slices.Equal(xs[len(xs)-1], traced.X) {
				t.Errorf("%s m=%d: last traced iterate %v, want Result.X %v", c.name, m, xs[len(xs)-1], traced.X)
			}
		}
	}
}

// TestHeavyBallTraceFollowsRecursion checks with the noise off that the
// traced iterates are heavy ball's x_t: each x_{t+1} is recomputed from
// the traced x_t and x_{t−1} by eq. (9), x_{t+1} = x_t − α∇F(x_t) +
// β(x_t − x_{t−1}), with α = c/L and β = (1 − √(αμ))/(1 + √(αμ)) written
// out here.
func TestHeavyBallTraceFollowsRecursion(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 300, 4, 0.05, 11)
	const L, mu, c = 2.0, 0.05, 0.5
	var xs [][]float64
	hb := &HeavyBall{LaplaceSettings: LaplaceSettings{Epsilon: math.Inf(1), Iterations: 25, StepMult: c,
		Smoothness: L, StrongConvexity: mu, Start: []float64{3, -2, 1, 4},
		Trace: func(_ int, x []float64) { xs = append(xs, slices.Clone(x)) }}}
	if _, err := hb.Solve(p, NewNoise(1)); err != nil {
		t.Fatal(err)
	}
	alpha := c / L
	beta := (1 - math.Sqrt(alpha*mu)) / (1 + math.Sqrt(alpha*mu))
	g := make([]float64, 4)
	for k := 0; k+1 < len(xs); k++ {
		prev := xs[max(k-1, 0)]
		p.Gradient(g, xs[k])
		want := make([]float64, 4)
		for j := range want {
			want[j] = xs[k][j] - alpha*g[j] + beta*(xs[k][j]-prev[j])
		}
		if !floats.EqualApprox(xs[k+1], want, 1e-12) {
			t.Fatalf("step %d: traced %v, recursion gives %v", k+1, xs[k+1], want)
		}
	}
	if len(xs) != 26 {
		t.Errorf("%d iterates traced, want 26", len(xs))
	}
}
