package erm

import (
	"math"
	"testing"
)

// TestNoiseOffReachesOptimum runs every solver with ε = +Inf (no noise) and
// checks it reaches the certified optimum within 1e-6 relative objective.
// Iteration counts are chosen from each method's rate on these problems:
// κ = L/μ = (0.25 + 0.05)/0.05 = 6 for the logistic problems (L the
// data-independent bound), so GD needs about κ·log(1e7) ≈ 100 steps and the
// accelerated methods about √κ·log(1e7) ≈ 40; MASG's stages shrink the step
// by 4 each while doubling in length, so it needs its first few stages in
// full (a few thousand iterations); DP-AccMD converges only as O(1/T²).
func TestNoiseOffReachesOptimum(t *testing.T) {
	inf := math.Inf(1)
	logit := normalizedProblem(t, Logistic{}, 1000, 10, 0.05, 1)
	lasso := normalizedProblem(t, Logistic{}, 1000, 10, 0.05, 1)
	lasso.L1 = 0.01
	weak := normalizedProblem(t, Logistic{}, 1000, 10, 0.005, 1)
	weak.L1 = 0.002
	ball := normalizedProblem(t, Logistic{}, 1000, 10, 0.001, 1)
	ball.Radius = 0.5
	ridge := normalizedProblem(t, Squared{}, 1000, 10, 0.01, 2)
	svm := normalizedProblem(t, Hinge{}, 1000, 10, 0.01, 3)
	laplace := func(T int) LaplaceSettings { return LaplaceSettings{Epsilon: inf, Iterations: T} }
	cases := []struct {
		name   string
		p      *Problem
		solver Solver
	}{
		{"DP-GD", logit, &GD{laplace(400)}},
		{"DP-SHB", logit, &HeavyBall{LaplaceSettings: laplace(400)}},
		{"DP-NAG", logit, &NAG{LaplaceSettings: laplace(400)}},
		{"DP-NAG-opt", logit, &NAG{LaplaceSettings: laplace(400), Optimal: true}},
		{"DP-MASG", logit, &MASG{LaplaceSettings: laplace(5000)}},
		{"DP-MASG-opt", logit, &MASG{LaplaceSettings: laplace(5000), Optimal: true}},
		{"DP-GD (PL)", logit, &GDPL{Epsilon: inf, Iterations: 400}},
		{"DP-SVRG", logit, &SVRG{Epsilon: inf, Epochs: 30}},
		{"DP-SVRG prox", lasso, &SVRG{Epsilon: inf, Epochs: 30}},
		{"DP-SVRG prox shuffled", lasso, &SVRG{Epsilon: inf, Epochs: 30, Sampling: Shuffled}},
		{"DP-SVRG++ prox", weak, &SVRGPlusPlus{Epsilon: inf, Epochs: 14}},
		{"DP-AccMD", ball, &AccMD{Epsilon: inf, Iterations: 3000}},
		{"DP-SCD logistic", logit, &SCD{Epsilon: inf, Epochs: 40, BatchSize: 10}},
		{"DP-SCD ridge", ridge, &SCD{Epsilon: inf, Epochs: 40, BatchSize: 10}},
		// On the hinge dual the σ' = L steps converge only sublinearly for
		// L > 1 (6e-7 after 800 epochs at L = 10); L = 1 is SDCA, linear
		// (a little slower with Poisson batches, whose size varies).
		{"DP-SCD hinge", svm, &SCD{Epsilon: inf, Epochs: 300, BatchSize: 1}},
		{"DP-SCD hinge shuffled", svm, &SCD{Epsilon: inf, Epochs: 100, BatchSize: 1, Sampling: Shuffled}},
		{"DP-SCD logistic shuffled", logit, &SCD{Epsilon: inf, Epochs: 40, BatchSize: 10, Sampling: Shuffled}},
		{"seqDP-SCD logistic", logit, &SequentialSCD{Epsilon: inf, Epochs: 40, BatchSize: 10}},
		{"seqDP-SCD hinge", svm, &SequentialSCD{Epsilon: inf, Epochs: 300, BatchSize: 10}},
		{"primalDP-SCD logistic", logit, &PrimalSCD{Epsilon: inf, Epochs: 60, BatchSize: 1}},
		{"primalDP-SCD ridge", ridge, &PrimalSCD{Epsilon: inf, Epochs: 60, BatchSize: 2}},
	}
	opt := map[*Problem]*Optimum{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := opt[c.p]
			if o == nil {
				o = mustOptimum(t, c.p)
				opt[c.p] = o
			}
			res, err := c.solver.Solve(c.p, NewNoise(1))
			if err != nil {
				t.Fatal(err)
			}
			if !math.IsInf(res.Epsilon, 1) || res.Delta != 0 {
				t.Errorf("noise off but ε = %v, δ = %v", res.Epsilon, res.Delta)
			}
			g := relGap(c.p, o, res.X)
			t.Logf("%s: relative gap %.3g after %d iterations", c.name, g, res.Iterations)
			if g > 1e-6 {
				t.Errorf("relative objective gap %.3g > 1e-6", g)
			}
		})
	}
}
