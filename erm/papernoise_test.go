package erm

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
)

// TestPaperNoiseSigma: with PaperConstant = c each solver's σ is its equation in the
// paper as printed, evaluated here by hand (n = 1000, δ = 1e-3, ε = 0.5, G = 1 from the
// unit rows, ln(1000) = 6.907755, ln(2000) = 7.600902):
//
//	eq. (3)  DP-SVRG,   c = 1, T = 2, m = 10:  σ² = 20·6.907755/(10⁶·0.25)     → σ = 0.0235078800
//	eq. (6)  DP-SVRG++, c = 2, T = 2, m = 3:   σ² = 2·2²·3·7.600902/(10⁶·0.25) → σ = 0.0270127125
//	eq. (11) DP-GD,     c = 1, T = 50:         σ² = 50·6.907755/(10⁶·0.25)     → σ = 0.0371692219
//
// Every such run carries the "not DP at the printed ε" label, and its Epsilon is the
// proven ε of that σ: for DP-GD the zCDP bound ρ + 2√(ρ ln(1/δ)) with ρ = 2T/(n²σ²) =
// 0.0723823, ε = 1.4865960 (> 0.5); for the SVRG pair the RDP ledger's, far above 0.5.
func TestPaperNoiseSigma(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 1000, 5, 0.01, 3)
	cases := []struct {
		name      string
		s         Solver
		eq        string
		sigma     float64
		provenEps float64 // 0: only check it exceeds ε
	}{
		{"dp-svrg", &SVRG{Epsilon: 0.5, Delta: 1e-3, Epochs: 2, InnerSteps: 10, PaperConstant: 1, Sampling: One}, "eq. (3)", 0.023507880004768, 0},
		{"dp-svrg-bb", &SVRG{Epsilon: 0.5, Delta: 1e-3, Epochs: 2, InnerSteps: 10, PaperConstant: 1, BB: true}, "eq. (3)", 0.023507880004768, 0},
		{"dp-svrg++", &SVRGPlusPlus{Epsilon: 0.5, Delta: 1e-3, Epochs: 2, InnerSteps: 3, PaperConstant: 2, Sampling: One}, "eq. (6)", 0.027012712490900, 0},
		{"dp-gd", &GDPL{Epsilon: 0.5, Delta: 1e-3, Iterations: 50, PaperConstant: 1}, "eq. (11)", 0.037169221888498, 1.4865959760236},
	}
	for _, c := range cases {
		r, err := c.s.Solve(p, NewNoise(1))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Paper == nil {
			t.Fatalf("%s: Result.Paper is nil", c.name)
		}
		if r.Paper.Equation != c.eq || math.Abs(r.Paper.Sigma-c.sigma) > 1e-12*c.sigma || r.Paper.Epsilon != 0.5 {
			t.Errorf("%s: paper calibration %+v, want %s, σ = %.12g at ε = 0.5", c.name, *r.Paper, c.eq, c.sigma)
		}
		if !strings.HasPrefix(r.Calibration, NotDP) || NotDP != "not DP at the printed ε" {
			t.Errorf("%s: calibration %q does not start with the label %q", c.name, r.Calibration, NotDP)
		}
		if c.provenEps != 0 && math.Abs(r.Epsilon-c.provenEps) > 1e-9 {
			t.Errorf("%s: Epsilon = %.10g, want the zCDP ε of σ, %.10g", c.name, r.Epsilon, c.provenEps)
		}
		if !(r.Epsilon > 0.5) {
			t.Errorf("%s: Epsilon = %g: the proven ε of the paper's σ must exceed the printed 0.5", c.name, r.Epsilon)
		}
	}
}

// TestPaperNoiseApplied: the noise a paper-calibrated run adds has the formula's σ. With
// one step from x = 0 the noise is recoverable from the release: DP-GD (T = 1) releases
// x₁ = −η(∇F(0) + z); DP-SVRG (T = m = 1) releases x₁ = −η(ṽ + u)/(1 + ηλ), ṽ = ∇F(0)
// (the sampled difference is 0 at the snapshot). eq. (11) and eq. (3) with T·m = 1,
// c = 1, ε = 0.05, δ = 1e-3, n = 1000 give σ = √6.907755/50 = 0.0525652177; the sample
// sd over d = 400 coordinates has relative sd 1/√800 = 3.5 %, so 12 % is 3.4 sd.
func TestPaperNoiseApplied(t *testing.T) {
	const want = 0.05256521769756932
	const lambda = 0.01
	p := normalizedProblem(t, Logistic{}, 1000, 400, lambda, 5)
	grad0 := make([]float64, p.Dim())
	p.Gradient(grad0, make([]float64, p.Dim()))
	recover := func(name string, x []float64, scale float64) {
		z := make([]float64, len(x))
		for j := range x {
			z[j] = -x[j]*scale - grad0[j]
		}
		if sd := stat.StdDev(z, nil); math.Abs(sd/want-1) > 0.12 {
			t.Errorf("%s: noise sd %.5g, want σ = %.5g", name, sd, want)
		}
		if m := floats.Sum(z) / float64(len(z)); math.Abs(m) > 4*want/math.Sqrt(float64(len(z))) {
			t.Errorf("%s: noise mean %.3g, want 0", name, m)
		}
	}
	eta := 0.5
	r, err := (&GDPL{Epsilon: 0.05, Delta: 1e-3, Iterations: 1, StepSize: eta, PaperConstant: 1}).Solve(p, NewNoise(7))
	if err != nil {
		t.Fatal(err)
	}
	recover("dp-gd", r.X, 1/eta)
	eta = 0.1
	r, err = (&SVRG{Epsilon: 0.05, Delta: 1e-3, Epochs: 1, InnerSteps: 1, StepSize: eta, Sampling: One, PaperConstant: 1}).Solve(p, NewNoise(8))
	if err != nil {
		t.Fatal(err)
	}
	recover("dp-svrg", r.X, (1+eta*lambda)/eta)
}

// TestPaperNoiseRefused: bad constants, and the formula at ε = +Inf, are refused with
// ErrInvalid naming PaperConstant.
func TestPaperNoiseRefused(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 200, 3, 0.01, 1)
	for _, c := range []float64{-1, math.NaN(), math.Inf(1), math.Inf(-1)} {
		for name, s := range map[string]Solver{
			"dp-svrg":   &SVRG{Epsilon: 1, Delta: 1e-3, Epochs: 1, InnerSteps: 5, PaperConstant: c},
			"dp-svrg++": &SVRGPlusPlus{Epsilon: 1, Delta: 1e-3, Epochs: 1, PaperConstant: c},
			"dp-gd":     &GDPL{Epsilon: 1, Delta: 1e-3, Iterations: 5, PaperConstant: c},
		} {
			_, err := s.Solve(p, NewNoise(1))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "PaperConstant") {
				t.Errorf("%s, c = %v: err %v, want ErrInvalid naming PaperConstant", name, c, err)
			}
		}
	}
	_, err := (&GDPL{Epsilon: math.Inf(1), Iterations: 5, PaperConstant: 1}).Solve(p, NewNoise(1))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "finite ε") {
		t.Errorf("ε = +Inf: err %v, want ErrInvalid asking for a finite ε", err)
	}
	// Off (0) leaves the proven calibration: no label, ε at most the target.
	r, err := (&GDPL{Epsilon: 1, Delta: 1e-3, Iterations: 5}).Solve(p, NewNoise(1))
	if err != nil || r.Paper != nil || strings.Contains(r.Calibration, NotDP) || r.Epsilon > 1+1e-9 {
		t.Errorf("proven calibration: %+v, %v", r, err)
	}
}
