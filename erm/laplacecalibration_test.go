package erm

import (
	"math"
	"testing"
)

// Oracles of digest §2.2 (S1 = 40, n = 1e5, ε = 1), recomputed there from
// Proposition 3.1 and eq. (11) of the DP accelerated methods paper.
func TestUniformLaplaceScaleOracles(t *testing.T) {
	cases := []struct {
		T, m    int
		eps0, b float64
	}{
		{100, 1000, 0.695652, 0.057500},
		{100, 100000, 0.01, 0.04},
		{1000, 1000, 0.095356, 0.419482},
		{1000, 100000, 0.001, 0.4},
	}
	for _, c := range cases {
		b, eps0 := UniformLaplaceScale(40, 1, c.T, 100000, c.m)
		if math.Abs(eps0-c.eps0) > 1e-6 || math.Abs(b-c.b) > 1e-6 {
			t.Errorf("T=%d m=%d: eps0 = %.7f, b = %.7f; want %.6f, %.6f", c.T, c.m, eps0, b, c.eps0, c.b)
		}
		// Each iteration leaks ε/T, so T of them leak ε (Theorem A.2).
		if got := float64(c.T) * PerStepEpsilon(40, b, 100000, c.m); math.Abs(got-1) > 1e-12 {
			t.Errorf("T=%d m=%d: T·epsfn = %v, want 1", c.T, c.m, got)
		}
	}
	if got := PerStepEpsilon(40, 0.05, 100000, 1000); math.Abs(got-0.0121809) > 1e-6 {
		t.Errorf("epsfn(40, 0.05, 1e5, 1e3) = %v, want 0.0121809", got)
	}
	// m = n: eq. (11) is S1/(b n).
	if got, want := PerStepEpsilon(40, 0.3, 1000, 1000), 40/(0.3*1000); math.Abs(got-want) > 1e-12 {
		t.Errorf("epsfn at m = n = %v, want S/(bn) = %v", got, want)
	}
}

func TestLaplaceScaleInvertsPerStepEpsilon(t *testing.T) {
	for _, epsT := range []float64{1e-4, 0.01, 0.3, 2, 10} {
		for _, m := range []int{1, 50, 1000, 100000} {
			b := LaplaceScale(40, epsT, 100000, m)
			if got := PerStepEpsilon(40, b, 100000, m); math.Abs(got-epsT) > 1e-12*max(1, epsT) {
				t.Errorf("ε_t = %v, m = %d: round trip gives %v", epsT, m, got)
			}
		}
	}
	if LaplaceScale(40, math.Inf(1), 10, 10) != 0 {
		t.Error("ε_t = +Inf should mean no noise")
	}
}
