package erm

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// TestSolverInputErrors feeds every solver bad budgets and settings.
func TestSolverInputErrors(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 60, 4, 0.05, 1)
	ball := normalizedProblem(t, Logistic{}, 60, 4, 0.05, 1)
	ball.Radius = 1
	nan := math.NaN()
	cases := []struct {
		name string
		p    *Problem
		s    Solver
	}{
		{"GD ε=0", p, &GD{LaplaceSettings{Epsilon: 0, Iterations: 10}}},
		{"GD ε=NaN", p, &GD{LaplaceSettings{Epsilon: nan, Iterations: 10}}},
		{"GD T=0", p, &GD{LaplaceSettings{Epsilon: 1}}},
		{"NAG batch>n", p, &NAG{LaplaceSettings: LaplaceSettings{Epsilon: 1, Iterations: 10, BatchSize: 61}}},
		{"NAG start length", p, &NAG{LaplaceSettings: LaplaceSettings{Epsilon: 1, Iterations: 10, Start: []float64{1}}}},
		{"HB momentum", p, &HeavyBall{LaplaceSettings: LaplaceSettings{Epsilon: 1, Iterations: 10}, Momentum: 1.5}},
		{"MASG P", p, &MASG{LaplaceSettings: LaplaceSettings{Epsilon: 1, Iterations: 10}, P: -1}},
		{"GDPL δ=0", p, &GDPL{Epsilon: 1, Delta: 0, Iterations: 5}},
		{"GDPL δ=1", p, &GDPL{Epsilon: 1, Delta: 1, Iterations: 5}},
		{"GDPL step", p, &GDPL{Epsilon: 1, Delta: 1e-3, Iterations: 5, StepSize: 100}},
		{"SVRG ε<0", p, &SVRG{Epsilon: -1, Delta: 1e-3}},
		{"SVRG noise off no epochs", p, &SVRG{Epsilon: math.Inf(1)}},
		{"SVRG++ batch", p, &SVRGPlusPlus{Epsilon: 1, Delta: 1e-3, BatchSize: -2}},
		{"AccMD no ball", p, &AccMD{Epsilon: 1, Delta: 1e-3, Iterations: 5}},
		{"AccMD T=0", ball, &AccMD{Epsilon: 1, Delta: 1e-3}},
		{"SeqSCD δ NaN", p, &SequentialSCD{Epsilon: 1, Delta: nan}},
		{"PrimalSCD epochs", p, &PrimalSCD{Epsilon: math.Inf(1), Epochs: -1}},
	}
	for _, c := range cases {
		if _, err := c.s.Solve(c.p, NewNoise(1)); err == nil {
			t.Errorf("%s: accepted", c.name)
		} else if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: error %v wraps neither ErrInvalid nor ErrUnsupported", c.name, err)
		}
	}
	// Unsupported combinations.
	hinge := normalizedProblem(t, Hinge{}, 60, 4, 0.05, 1)
	ridge := normalizedProblem(t, Squared{}, 60, 4, 0.05, 1)
	for name, c := range map[string]struct {
		p *Problem
		s Solver
	}{
		"NAG hinge":       {hinge, &NAG{LaplaceSettings: LaplaceSettings{Epsilon: 1, Iterations: 3}}},
		"GD squared":      {ridge, &GD{LaplaceSettings{Epsilon: 1, Iterations: 3}}},
		"SVRG hinge":      {hinge, &SVRG{Epsilon: 1, Delta: 1e-3}},
		"GDPL squared":    {ridge, &GDPL{Epsilon: 1, Delta: 1e-3, Iterations: 3}},
		"PrimalSCD hinge": {hinge, &PrimalSCD{Epsilon: 1, Delta: 1e-3}},
	} {
		if _, err := c.s.Solve(c.p, NewNoise(1)); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: error %v, want ErrUnsupported", name, err)
		}
	}
	// Labels must be ±1 for classification.
	bad := normalizedProblem(t, Logistic{}, 20, 3, 0.05, 1)
	bad.Data.Y[3] = 0
	if _, err := (&GD{LaplaceSettings{Epsilon: 1, Iterations: 3}}).Solve(bad, NewNoise(1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("label 0 accepted: %v", err)
	}
	raw := normalizedProblem(t, Logistic{}, 20, 3, 0.05, 1)
	raw.Data.L1Bound, raw.Data.L2Bound = 0, 0
	if _, err := (&GD{LaplaceSettings{Epsilon: 1, Iterations: 3}}).Solve(raw, NewNoise(1)); !errors.Is(err, ErrNoBound) {
		t.Errorf("no declared bound: error %v, want ErrNoBound", err)
	}
	if _, err := (&GDPL{Epsilon: 1, Delta: 1e-3, Iterations: 3}).Solve(raw, NewNoise(1)); !errors.Is(err, ErrNoBound) {
		t.Errorf("no declared bound: error %v, want ErrNoBound", err)
	}
}

// TestLaplaceStepNoise checks one DP-GD step's noise statistically: with
// x_1 = x_0 − α(∇F(x_0) + η), η = (x_0 − x_1)/α − ∇F(x_0) must be
// Laplace(b) with b = S1·T/(nε) (m = n), i.e. E|η_j| = b.
func TestLaplaceStepNoise(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 200, 10, 0.05, 4)
	const eps, T = 2.0, 5
	s1, _ := p.L1Sensitivity()
	b := s1 * T / (200 * eps)
	alpha := 1 / p.Smoothness()
	g := make([]float64, 10)
	p.Gradient(g, make([]float64, 10))
	var sumAbs float64
	const runs = 4000
	for seed := range runs {
		// One iteration with the budget of one of T steps.
		res, err := (&GD{LaplaceSettings{Epsilon: eps / T, Iterations: 1}}).Solve(p, NewNoise(uint64(seed)))
		if err != nil {
			t.Fatal(err)
		}
		for j, x := range res.X {
			sumAbs += math.Abs(-x/alpha - g[j])
		}
	}
	if got := sumAbs / (runs * 10); math.Abs(got-b) > 0.02*b {
		t.Errorf("E|η| = %v, want b = S1·T/(nε) = %v", got, b)
	}
}

// TestGaussianStepNoise checks one DP-GD (PL) step's noise: the sample
// standard deviation of η = (x_0 − x_1)/η_step − ∇F(x_0) over many seeds is
// the zCDP σ of digest §4.6 (recomputed here) within 2%.
func TestGaussianStepNoise(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 300, 10, 0.05, 4)
	const eps, delta = 0.5, 1e-3
	l := math.Log(1 / delta)
	rho := math.Pow(math.Sqrt(l+eps)-math.Sqrt(l), 2)
	G, _ := p.Lipschitz()
	want := G * math.Sqrt(2/rho) / 300 // T = 1
	eta := 1 / p.Smoothness()
	g := make([]float64, 10)
	p.Gradient(g, make([]float64, 10))
	var ss float64
	const runs = 3000
	for seed := range runs {
		res, err := (&GDPL{Epsilon: eps, Delta: delta, Iterations: 1}).Solve(p, NewNoise(uint64(seed)))
		if err != nil {
			t.Fatal(err)
		}
		for j, x := range res.X {
			e := -x/eta - g[j]
			ss += e * e
		}
	}
	if got := math.Sqrt(ss / (runs * 10)); math.Abs(got-want) > 0.02*want {
		t.Errorf("noise std %v, want σ = %v", got, want)
	}
}

// TestAccMDStaysInBall checks the released y_T is feasible and the privacy
// spent is the budget.
func TestAccMDStaysInBall(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 300, 6, 0.01, 2)
	p.Radius = 0.3
	res, err := (&AccMD{Epsilon: 1, Delta: 1e-3, Iterations: 50}).Solve(p, NewNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	if nrm := floats.Norm(res.X, 2); nrm > p.Radius*(1+1e-12) {
		t.Errorf("‖y_T‖ = %v > R = %v", nrm, p.Radius)
	}
	if math.Abs(res.Epsilon-1) > 1e-9 || res.Delta != 1e-3 {
		t.Errorf("spent (%v, %v)", res.Epsilon, res.Delta)
	}
}

// TestPrivateRunsSpendBudget runs each (ε, δ) solver privately once and
// checks it reports no more than the budget, and that seeded runs repeat.
func TestPrivateRunsSpendBudget(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 400, 5, 0.05, 3)
	lasso := normalizedProblem(t, Logistic{}, 400, 5, 0.05, 3)
	lasso.L1 = 0.01
	cols := normalizedProblem(t, Logistic{}, 400, 5, 0.05, 3)
	cols.Data.NormalizeFeatures() // primalDP-SCD's Lemma 4 assumption
	for name, c := range map[string]struct {
		p *Problem
		s Solver
	}{
		"DP-SVRG":      {lasso, &SVRG{Epsilon: 1, Delta: 1e-3, Epochs: 3}},
		"DP-SVRG++":    {p, &SVRGPlusPlus{Epsilon: 1, Delta: 1e-3, Epochs: 3}},
		"DP-GD (PL)":   {p, &GDPL{Epsilon: 1, Delta: 1e-3}},
		"DP-SCD":       {p, &SCD{Epsilon: 1, Delta: 1e-3, Epochs: 2, BatchSize: 20}},
		"seqDP-SCD":    {p, &SequentialSCD{Epsilon: 1, Delta: 1e-3, Epochs: 2, BatchSize: 20}},
		"primalDP-SCD": {cols, &PrimalSCD{Epsilon: 1, Delta: 1e-3, Epochs: 2, BatchSize: 2}},
	} {
		r1, err := c.s.Solve(c.p, NewNoise(5))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r1.Epsilon > 1 || r1.Delta != 1e-3 {
			t.Errorf("%s: spent (%v, %v), budget (1, 1e-3)", name, r1.Epsilon, r1.Delta)
		}
		r2, _ := c.s.Solve(c.p, NewNoise(5))
		if !floats.Equal(r1.X, r2.X) {
			t.Errorf("%s: same seed, different models", name)
		}
	}
}

// TestPrimalSCDNeedsUnitFeatures checks primalDP-SCD refuses data whose
// feature columns are longer than 1 (its sensitivity proof needs them ≤ 1).
func TestPrimalSCDNeedsUnitFeatures(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 400, 5, 0.05, 3)
	if _, err := (&PrimalSCD{Epsilon: 1, Delta: 1e-3}).Solve(p, NewNoise(1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("error %v, want ErrInvalid", err)
	}
}

// TestSVRGStepNoise checks one DP-SVRG inner step's noise: from x̃ = x_0 = 0
// with m = 1 the step is x_1 = −η(∇F_loss(0) + u)/(1 + ηλ), so
// u = −x_1(1 + ηλ)/η − ∇F_loss(0) must have the calibrated std σ.
func TestSVRGStepNoise(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 300, 10, 0.05, 4)
	a := &SVRG{Epsilon: 1, Delta: 1e-3, Epochs: 1, InnerSteps: 1}
	c, m, T, err := a.plan(p)
	if err != nil || m != 1 || T != 1 {
		t.Fatal(m, T, err)
	}
	const sigma = 0.37 // the calibration is TestSVRGNoise's business
	eta := 1 / (40 * (p.Smoothness() - p.Lambda))
	g := make([]float64, 10)
	zero := make([]float64, 10)
	p.Gradient(g, zero) // at 0 the ridge term vanishes: the loss part
	var ss float64
	const runs = 3000
	for seed := range runs {
		x1 := a.iterate(p, NewNoise(uint64(seed)), c, m, T, sigma)
		for j, x := range x1 {
			u := -x*(1+eta*p.Lambda)/eta - g[j]
			ss += u * u
		}
	}
	if got := math.Sqrt(ss / (runs * 10)); math.Abs(got-sigma) > 0.02*sigma {
		t.Errorf("inner-step noise std %v, want σ = %v", got, sigma)
	}
}
