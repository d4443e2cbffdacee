package erm

import (
	"math"
	"slices"
	"testing"
)

// sigmoidLoss is the non-convex sigmoid loss l(z, y) = 1/(1 + e^{yz}):
// 1/4-Lipschitz, |l”| ≤ 1/(6√3) < 0.0963.
type sigmoidLoss struct{}

func (sigmoidLoss) Name() string { return "sigmoid" }
func (sigmoidLoss) Value(z, y float64) float64 {
	return 1 / (1 + math.Exp(y*z))
}
func (sigmoidLoss) Deriv(z, y float64) float64 {
	s := 1 / (1 + math.Exp(y*z))
	return -y * s * (1 - s)
}
func (sigmoidLoss) Deriv2(z, y float64) float64 {
	s := 1 / (1 + math.Exp(y*z))
	return y * y * s * (1 - s) * (1 - 2*s)
}
func (sigmoidLoss) Lipschitz() float64   { return 0.25 }
func (sigmoidLoss) Smoothness() float64  { return 0.0963 }
func (sigmoidLoss) Classification() bool { return true }

// TestGDPLRandomIterateUniform checks Theorem 6.3's output on a non-convex
// objective (the sigmoid loss): with the noise off the iterates are
// x_{t+1} = x_t − η∇F(x_t), computed here by hand from x_0 = (0.5, …); the
// released point must be one of x_0, …, x_{T−1} (never x_T), and over 3000
// seeds the index must be uniform (χ², 4 degrees of freedom, 0.1 % critical
// value 18.47).
func TestGDPLRandomIterateUniform(t *testing.T) {
	p := normalizedProblem(t, sigmoidLoss{}, 60, 4, 0, 5)
	const T, eta = 5, 8.0
	start := []float64{0.5, 0.5, 0.5, 0.5}
	iters := [][]float64{slices.Clone(start)}
	g := make([]float64, 4)
	for range T {
		x := slices.Clone(iters[len(iters)-1])
		p.Gradient(g, x)
		for j := range x {
			x[j] -= eta * g[j]
		}
		iters = append(iters, x)
	}
	for k := 1; k <= T; k++ { // distinct iterates, so the index is identifiable
		if d := dist(iters[k], iters[k-1]); d < 1e-6 {
			t.Fatalf("iterates %d and %d coincide", k-1, k)
		}
	}
	counts := make([]int, T)
	const runs = 3000
	for seed := range runs {
		a := &GDPL{Epsilon: math.Inf(1), Iterations: T, StepSize: eta, Start: start, RandomIterate: true}
		res, err := a.Solve(p, NewNoise(uint64(seed)))
		if err != nil {
			t.Fatal(err)
		}
		k := -1
		for i, x := range iters {
			if dist(res.X, x) < 1e-12 {
				k = i
			}
		}
		if k < 0 || k == T {
			t.Fatalf("seed %d: released %v is not one of x_0..x_{T−1} (index %d)", seed, res.X, k)
		}
		counts[k]++
	}
	var chi2 float64
	exp := float64(runs) / T
	for _, c := range counts {
		chi2 += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	if chi2 > 18.47 {
		t.Errorf("index counts %v: χ² = %v", counts, chi2)
	}
}

// TestGDPLRandomIterateNoisy checks with the noise on that the released
// point is one of the iterates the run went through (seen by gdplTrace), and
// Theorem 6.3's default T = ⌈√L·n·ε/(G√(d log(1/δ)))⌉: logistic loss, unit
// rows (G = 1, L = 1/4), n = 200, d = 5, ε = 1, δ = 1e-3:
// 0.5·200/√(5·6.9078) = 17.02, so T = 18.
func TestGDPLRandomIterateNoisy(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 200, 5, 0, 5)
	var seen [][]float64
	gdplTrace = func(_ int, x []float64) { seen = append(seen, slices.Clone(x)) }
	defer func() { gdplTrace = nil }()
	for seed := range 20 {
		seen = seen[:0]
		res, err := (&GDPL{Epsilon: 1, Delta: 1e-3, RandomIterate: true}).Solve(p, NewNoise(uint64(seed)))
		if err != nil {
			t.Fatal(err)
		}
		if res.Iterations != 18 || len(seen) != 18 {
			t.Fatalf("T = %d (%d iterates), want 18", res.Iterations, len(seen))
		}
		found := false
		for _, x := range seen {
			found = found || dist(res.X, x) == 0
		}
		if !found {
			t.Errorf("seed %d: released point is none of the iterates", seed)
		}
	}
}

func dist(a, b []float64) float64 {
	var s float64
	for j := range a {
		s += (a[j] - b[j]) * (a[j] - b[j])
	}
	return math.Sqrt(s)
}
