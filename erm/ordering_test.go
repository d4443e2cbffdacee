package erm

import (
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/privtrain/privtrain/erm/data"
)

// TestSyntheticOrdering reruns the DP accelerated methods paper's synthetic
// experiment (Sec. 5, digest §2.7: n = 1e5, d = 20, λ‖x‖² with λ = 0.01,
// S1 = 40, L = λ_max(UᵀU/n) + 2λ, x_0 = 10·1, m = n, ε = 1, c = 0.1) with 5
// noise seeds and compares mean excess risks with the ordering the paper
// reports: DP-NAG-opt and DP-MASG-opt ≤ DP-NAG ≤ DP-GD.
//
// What holds and what does not (investigated, not tuned; see the package
// report in docs/results/erm.md):
//   - T = 100: DP-MASG-opt ≤ DP-NAG ≤ DP-GD hold by wide margins (the bias
//     from x_0 dominates and acceleration removes it). DP-NAG-opt re-selects
//     T' = T and differs from DP-NAG only in how the noise is spread, which
//     is small next to the bias: the two tie within seed noise, so that leg is
//     asserted as a statistical ≤ (difference of means within 2 standard
//     errors of the paired difference).
//   - T = 1000: DP-NAG-opt ≤ DP-NAG holds (re-selected T' ≈ 300). DP-NAG ≤
//     DP-GD does NOT hold: by T = 1000 both have removed the bias and DP-NAG's
//     error is its noise floor (it is the same started from x*), which
//     momentum β ≈ 0.96 amplifies far beyond DP-GD's, as Theorem 4.1's
//     recursion predicts (stationary level ≈ √(α/μ)(1+αL)·b²d versus
//     ≈ αdσ²/4 for GD). The paper itself notes DP-GD reaching a lower level
//     than DP-NAG at T = 1000 (for c = 1). DP-MASG-opt ≤ DP-NAG does NOT hold
//     either: with c = 0.1 the bound (32) stops improving after MASG's first
//     stage (the step drops 16-fold at stage 2 and a_{T,0} doubles), so the
//     re-selection picks T' = end of stage 1 with the guess E_0 = 10, far
//     below the true F(x_0) − F* ≈ 113; the paper notes MASG's sensitivity
//     to small c. These two legs are logged, not asserted.
//
// The T = 1000 leg costs about 12,000 full gradients of the 1e5 examples
// (75 s of CPU, four times the rest of the package's tests): a long experiment,
// it runs only with PRIVTRAIN_LONG=1. TestSyntheticOrderingT1000 checks its
// asserted claim on a tenth of the examples by default.
func TestSyntheticOrdering(t *testing.T) {
	ds, err := data.Synthetic(100000, 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := &Problem{Data: ds, Loss: Logistic{}, Lambda: 2 * 0.01} // the paper's λ‖x‖², λ = 0.01
	opt := mustOptimum(t, p)
	L := p.SpectralSmoothness()
	for _, T := range []int{100, 1000} {
		t.Run("T="+strconv.Itoa(T), func(t *testing.T) {
			if T == 1000 && os.Getenv("PRIVTRAIN_LONG") == "" {
				t.Skip("the T = 1000 leg is a long experiment: set PRIVTRAIN_LONG=1 to run it")
			}
			ls := LaplaceSettings{Epsilon: 1, Iterations: T, StepMult: 0.1, Smoothness: L, Start: constant(10, 20)}
			solvers := []struct {
				name string
				s    Solver
			}{
				{"DP-GD", &GD{ls}},
				{"DP-NAG", &NAG{LaplaceSettings: ls}},
				{"DP-NAG-opt", &NAG{LaplaceSettings: ls, Optimal: true}},
				{"DP-MASG-opt", &MASG{LaplaceSettings: ls, Optimal: true}},
			}
			const seeds = 5
			risk := map[string][]float64{}
			for _, sv := range solvers {
				for seed := range seeds {
					res, err := sv.s.Solve(p, NewNoise(uint64(seed)))
					if err != nil {
						t.Fatal(err)
					}
					if math.Abs(res.Epsilon-1) > 1e-9 || res.Delta != 0 {
						t.Fatalf("%s spent (%v, %v), want pure ε = 1", sv.name, res.Epsilon, res.Delta)
					}
					risk[sv.name] = append(risk[sv.name], opt.ExcessRisk(p, res.X))
				}
				t.Logf("%-12s mean excess risk %.4g", sv.name, mean(risk[sv.name]))
			}
			gd, nag, nagOpt, masgOpt := mean(risk["DP-GD"]), mean(risk["DP-NAG"]), mean(risk["DP-NAG-opt"]), mean(risk["DP-MASG-opt"])
			if d, se := pairedDiff(risk["DP-NAG-opt"], risk["DP-NAG"]); d > 2*se {
				t.Errorf("DP-NAG-opt %.4g > DP-NAG %.4g beyond 2 standard errors (%.3g)", nagOpt, nag, se)
			}
			switch T {
			case 100:
				if !(masgOpt <= nag) {
					t.Errorf("DP-MASG-opt %.4g > DP-NAG %.4g", masgOpt, nag)
				}
				if !(nag <= gd) {
					t.Errorf("DP-NAG %.4g > DP-GD %.4g", nag, gd)
				}
			case 1000:
				if !(nagOpt <= nag) {
					t.Errorf("DP-NAG-opt %.4g > DP-NAG %.4g", nagOpt, nag)
				}
				t.Logf("not asserted (see the doc comment): DP-NAG %.4g vs DP-GD %.4g, DP-MASG-opt %.4g vs DP-NAG %.4g", nag, gd, masgOpt, nag)
			}
		})
	}
}

// TestSyntheticOrderingT1000 is the asserted claim of TestSyntheticOrdering's
// T = 1000 leg, DP-NAG-opt ≤ DP-NAG, on n = 1e4 examples instead of 1e5 (a
// tenth of the cost; the leg itself needs PRIVTRAIN_LONG=1). The per-step
// Laplace noise scales like 1/n, so DP-NAG's noise floor, the reason the
// claim holds, is higher here: over 10 seeds, when this test was written,
// every DP-NAG-opt run ended below every DP-NAG run (excess risk 3.8–4.7
// against 35–112).
func TestSyntheticOrderingT1000(t *testing.T) {
	ds, err := data.Synthetic(10000, 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := &Problem{Data: ds, Loss: Logistic{}, Lambda: 2 * 0.01}
	opt := mustOptimum(t, p)
	ls := LaplaceSettings{Epsilon: 1, Iterations: 1000, StepMult: 0.1, Smoothness: p.SpectralSmoothness(), Start: constant(10, 20)}
	var nag, nagOpt []float64
	for seed := range 5 {
		for _, sv := range []struct {
			s    Solver
			risk *[]float64
		}{{&NAG{LaplaceSettings: ls}, &nag}, {&NAG{LaplaceSettings: ls, Optimal: true}, &nagOpt}} {
			res, err := sv.s.Solve(p, NewNoise(uint64(seed)))
			if err != nil {
				t.Fatal(err)
			}
			*sv.risk = append(*sv.risk, opt.ExcessRisk(p, res.X))
		}
	}
	if !(mean(nagOpt) <= mean(nag)) {
		t.Errorf("DP-NAG-opt %.4g > DP-NAG %.4g (excess risks %v, %v)", mean(nagOpt), mean(nag), nagOpt, nag)
	}
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// pairedDiff returns the mean of a − b over paired seeds and its standard
// error.
func pairedDiff(a, b []float64) (d, se float64) {
	n := float64(len(a))
	diffs := make([]float64, len(a))
	for i := range a {
		diffs[i] = a[i] - b[i]
	}
	d = mean(diffs)
	var ss float64
	for _, x := range diffs {
		ss += (x - d) * (x - d)
	}
	return d, math.Sqrt(ss / (n - 1) / n)
}
