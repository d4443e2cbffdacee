package erm

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/erm/data"
	"github.com/privtrain/privtrain/internal/privrand"
)

// TestHeavyBallOracles checks digest §2.3 (μ = 0.5, L = 1, Q = diag(0.5, 1)).
func TestHeavyBallOracles(t *testing.T) {
	eigs := []float64{0.5, 1}
	alpha, beta := HeavyBallOptimal(0.5, 1)
	if math.Abs(alpha-1.372583) > 1e-6 || math.Abs(beta-0.029437) > 1e-6 {
		t.Errorf("α_HB, β_HB = %.7f, %.7f; want 1.372583, 0.029437", alpha, beta)
	}
	if rho := HeavyBallRate(alpha, beta, eigs); math.Abs(rho-0.171573) > 1e-6 {
		t.Errorf("ρ_HB = %.7f, want 0.171573 (= √β_HB; the printed theorem gives 0.410283)", rho)
	}
	for _, c := range []struct{ alpha, beta, rho, m float64 }{
		{1, 0, 0.5, 2.333333},
		{0.5, 0.3, 0.547723, 1.232450},
		{1, 0.5, 0.707107, 3.9},
	} {
		if rho := HeavyBallRate(c.alpha, c.beta, eigs); math.Abs(rho-c.rho) > 1e-6 {
			t.Errorf("(α, β) = (%v, %v): ρ = %.7f, want %v", c.alpha, c.beta, rho, c.rho)
		}
		if m := HeavyBallStationary(c.alpha, c.beta, eigs); math.Abs(m-c.m) > 1e-6 {
			t.Errorf("(α, β) = (%v, %v): m/σ² = %.7f, want %v", c.alpha, c.beta, m, c.m)
		}
	}
}

// TestHeavyBallStationaryLyapunov is the second oracle of digest §2.3:
// m(α, β)/σ² is the trace of the stationary covariance of x − x* under heavy
// ball with N(0, σ²I) gradient noise, computed here by iterating the discrete
// Lyapunov equation Σ = AΣAᵀ + BBᵀ of each eigen-direction's 2×2 system.
func TestHeavyBallStationaryLyapunov(t *testing.T) {
	eigs := []float64{0.5, 1}
	for _, c := range [][2]float64{{1, 0}, {0.5, 0.3}, {1, 0.5}, {0.3, 0.8}} {
		alpha, beta := c[0], c[1]
		var trace float64
		for _, lam := range eigs {
			a := mat.NewDense(2, 2, []float64{1 + beta - alpha*lam, -beta, 1, 0})
			bbT := mat.NewDense(2, 2, []float64{alpha * alpha, 0, 0, 0})
			s := mat.NewDense(2, 2, nil)
			var tmp, next mat.Dense
			for range 20000 {
				tmp.Mul(a, s)
				next.Mul(&tmp, a.T())
				next.Add(&next, bbT)
				s.Copy(&next)
			}
			trace += s.At(0, 0)
		}
		if m := HeavyBallStationary(alpha, beta, eigs); math.Abs(m-trace) > 1e-9*trace {
			t.Errorf("(α, β) = (%v, %v): formula %v, Lyapunov %v", alpha, beta, m, trace)
		}
	}
}

// TestHeavyBallSmoothedForm checks that DP-SHB's momentum form (eq. 9) and
// its smoothed-gradient form (eqs. 14–15) give the same iterates with the
// same noise draws.
func TestHeavyBallSmoothedForm(t *testing.T) {
	ds, err := data.Synthetic(300, 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	p := &Problem{Data: ds, Loss: Logistic{}, Lambda: 0.05}
	hb := &HeavyBall{LaplaceSettings: LaplaceSettings{Epsilon: 5, Iterations: 40, StepMult: 0.5}, Momentum: 0.7}
	res, err := hb.Solve(p, NewNoise(11))
	if err != nil {
		t.Fatal(err)
	}
	s1, _ := p.L1Sensitivity()
	b, _ := UniformLaplaceScale(s1, 5, 40, 300, 300)
	alpha := 0.5 / p.Smoothness()
	const beta = 0.7
	rng := NewNoise(11)
	x := make([]float64, 5)
	u := make([]float64, 5)
	g := make([]float64, 5)
	for range 40 {
		p.Gradient(g, x)
		privrand.AddLaplace(rng, g, b)
		floats.Scale(beta, u)
		floats.AddScaled(u, 1-beta, g) // u_t = β u_{t−1} + (1−β) g_t, u_{−1} = 0
		floats.AddScaled(x, -alpha/(1-beta), u)
	}
	for j := range x {
		if math.Abs(x[j]-res.X[j]) > 1e-12*(1+math.Abs(x[j])) {
			t.Fatalf("coordinate %d: momentum form %v, smoothed form %v", j, res.X[j], x[j])
		}
	}
	if math.Abs(res.Epsilon-5) > 1e-12 {
		t.Errorf("ε spent %v, want 5", res.Epsilon)
	}
}
