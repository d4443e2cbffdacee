package erm

import (
	"math"
	"testing"
)

// TestNAGSplitOracles checks digest §2.4's computed oracle for μ = 1,
// L = 20, α = 1/L, T = 5, S1 = 40, n = 1e5, ε = 1, d = 20, m = n.
func TestNAGSplitOracles(t *testing.T) {
	const mu, L, T, s1, n, eps, d = 1.0, 20.0, 5, 40.0, 100000, 1.0, 20
	alpha := 1 / L
	a0, a := NAGWeights(mu, L, alpha, T)
	wantA := []float64{0.036335, 0.046800, 0.060279, 0.077639, 0.100000}
	wantEps := []float64{0.167751, 0.182517, 0.198584, 0.216064, 0.235084}
	wantB := []float64{0.00238449, 0.00219157, 0.00201426, 0.00185130, 0.00170152}
	epsT := OptimalSplit(a, eps)
	b := splitScales(a, eps, s1, n, n)
	var sum float64
	for i := range a {
		if math.Abs(a[i]-wantA[i]) > 1e-6 {
			t.Errorf("a_{5,%d} = %.7f, want %.6f", i+1, a[i], wantA[i])
		}
		if math.Abs(epsT[i]-wantEps[i]) > 1e-6 {
			t.Errorf("ε_%d = %.7f, want %.6f", i+1, epsT[i], wantEps[i])
		}
		if math.Abs(b[i]-wantB[i]) > 1e-6 {
			t.Errorf("b_%d = %.8f, want %.8f", i+1, b[i], wantB[i])
		}
		sum += s1 / (n * b[i]) // Σ S1/(n b_t) = ε (Prop. 4.2's constraint)
	}
	if math.Abs(sum-eps) > 1e-12 {
		t.Errorf("Σ S1/(n b_t) = %v, want ε = 1", sum)
	}
	if want := math.Pow(1-math.Sqrt(alpha*mu), T); math.Abs(a0-want) > 1e-15 {
		t.Errorf("a_{5,0} = %v, want %v", a0, want)
	}
	opt := OptimalBound(0, a, 0, d, s1, n, eps) // noise term of (32)
	ub, _ := UniformLaplaceScale(s1, eps, T, n, n)
	if math.Abs(ub-0.002) > 1e-15 {
		t.Errorf("uniform b = %v, want 0.002", ub)
	}
	uni := NoiseTerm(a, constant(ub, T), d)
	if math.Abs(opt-2.4631e-05) > 1e-9 || math.Abs(uni-2.5684e-05) > 1e-9 {
		t.Errorf("noise terms: optimal %.5g, uniform %.5g; want 2.4631e-05, 2.5684e-05", opt, uni)
	}
	if got := NoiseTerm(a, b, d); math.Abs(got-opt) > 1e-15 {
		t.Errorf("d Σ a_t b_t² at the optimal b_t = %v, want (32)'s %v", got, opt)
	}
	if beta := (1 - math.Sqrt(alpha*mu)) / (1 + math.Sqrt(alpha*mu)); math.Abs(beta-0.634512) > 1e-6 {
		t.Errorf("β(NAG) = %v, want 0.634512", beta)
	}
}

// TestOptimalSplitIsOptimal perturbs the Prop. 4.2 split along the budget
// constraint and checks the noise term never improves (a brute-force check
// of the Lagrange solution).
func TestOptimalSplitIsOptimal(t *testing.T) {
	_, a := NAGWeights(0.02, 5.1, 0.1/5.1, 40)
	const s1, n, eps = 40.0, 100000, 1.0
	best := NoiseTerm(a, splitScales(a, eps, s1, n, n), 20)
	epsT := OptimalSplit(a, eps)
	for i := range a {
		for j := range a {
			if i == j {
				continue
			}
			for _, h := range []float64{1e-3, -1e-3} {
				pert := append([]float64(nil), epsT...)
				pert[i] += h * pert[i]
				pert[j] -= h * epsT[i] // keeps Σ ε_t = ε
				b := make([]float64, len(a))
				for k := range b {
					b[k] = LaplaceScale(s1, pert[k], n, n)
				}
				if got := NoiseTerm(a, b, 20); got < best*(1-1e-12) {
					t.Fatalf("perturbing ε_%d, ε_%d by %v lowers the noise term %v -> %v", i, j, h, best, got)
				}
			}
		}
	}
}

// TestMASGStages checks digest §2.5's table for μ = 1, L = 20, p = 1:
// base ⌈√20 log 8⌉ = 10 and (k, n_k, α^(k)) = (2, 40, 0.003125),
// (3, 80, 7.8125e-4), (4, 160, 1.953125e-4), (5, 320, 4.8828125e-5);
// stage 1 is ⌈2√20 log √20⌉ = 14 long (authors' code).
func TestMASGStages(t *testing.T) {
	lengths, alphas := MASGStages(1, 20, 1, 1, 14+40+80+160+320)
	wantN := []int{14, 40, 80, 160, 320}
	wantA := []float64{0.05, 0.003125, 0.00078125, 1.953125e-4, 4.8828125e-5}
	if len(lengths) != len(wantN) {
		t.Fatalf("stages %v, want %v", lengths, wantN)
	}
	for k := range wantN {
		if lengths[k] != wantN[k] || math.Abs(alphas[k]-wantA[k]) > 1e-15 {
			t.Errorf("stage %d: (%d, %v), want (%d, %v)", k+1, lengths[k], alphas[k], wantN[k], wantA[k])
		}
	}
	// A shorter run cuts the last stage.
	lengths, _ = MASGStages(1, 20, 1, 1, 100)
	if want := []int{14, 40, 46}; len(lengths) != 3 || lengths[0] != 14 || lengths[1] != 40 || lengths[2] != 46 {
		t.Errorf("T = 100: stages %v, want %v", lengths, want)
	}
	// c scales every step size.
	_, alphas = MASGStages(1, 20, 0.1, 1, 100)
	if math.Abs(alphas[1]-0.0003125) > 1e-18 {
		t.Errorf("c = 0.1: α^(2) = %v, want 3.125e-4", alphas[1])
	}
}

// TestStageWeights checks Theorem 4.3's weights against a direct evaluation
// of the product formula, and their reduction to NAGWeights for one stage.
func TestStageWeights(t *testing.T) {
	const mu, L = 1.0, 20.0
	_, want := NAGWeights(mu, L, 0.05, 30)
	a0, got := StageWeights(mu, L, constant(0.05, 30), constantInt(1, 30))
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Fatalf("single stage: a_%d = %v, NAGWeights %v", i+1, got[i], want[i])
		}
	}
	if w0, _ := NAGWeights(mu, L, 0.05, 30); math.Abs(a0-w0) > 1e-15 {
		t.Errorf("single stage a0 = %v, want %v", a0, w0)
	}
	alphas, stage := masgIterations(mu, L, 70)
	T := len(alphas)
	a0, a := StageWeights(mu, L, alphas, stage)
	for t1 := 1; t1 <= T; t1++ {
		prod := math.Exp2(float64(stage[T-1] - stage[t1-1]))
		for i := t1 + 1; i <= T; i++ {
			prod *= 1 - math.Sqrt(mu*alphas[i-1])
		}
		w := prod * alphas[t1-1] * (1 + alphas[t1-1]*L)
		if math.Abs(a[t1-1]-w) > 1e-14*w {
			t.Errorf("a_{T,%d} = %v, direct %v", t1, a[t1-1], w)
		}
	}
	p0 := math.Exp2(float64(stage[T-1] - 1))
	for i := 1; i <= T; i++ {
		p0 *= 1 - math.Sqrt(mu*alphas[i-1])
	}
	if math.Abs(a0-p0) > 1e-14*p0 {
		t.Errorf("a_{T,0} = %v, direct %v", a0, p0)
	}
}

// TestSelectIterations compares the linear-time re-selection of Remark 4.1
// with a brute-force evaluation of (32) for every T'.
func TestSelectIterations(t *testing.T) {
	const mu, L, s1, n, eps, d, e0 = 0.02, 5.1, 40.0, 100000, 1.0, 20, 10.0
	for _, c := range []float64{0.1, 1} {
		alpha := c / L
		for _, Tmax := range []int{1, 100, 1000} {
			best, bestT := math.Inf(1), 0
			for T := 1; T <= Tmax; T++ {
				a0, a := NAGWeights(mu, L, alpha, T)
				if b := OptimalBound(a0, a, e0, d, s1, n, eps); b < best {
					best, bestT = b, T
				}
			}
			got := selectIterations(mu, L, constant(alpha, Tmax), constantInt(1, Tmax), e0, d, s1, n, eps)
			if got != bestT {
				t.Errorf("c = %v, T = %d: selected %d, brute force %d", c, Tmax, got, bestT)
			}
		}
	}
	// Multi-stage weights.
	alphas, stage := masgIterations(mu, L, 600)
	best, bestT := math.Inf(1), 0
	for T := 1; T <= len(alphas); T++ {
		a0, a := StageWeights(mu, L, alphas[:T], stage[:T])
		if b := OptimalBound(a0, a, e0, d, s1, n, eps); b < best {
			best, bestT = b, T
		}
	}
	if got := selectIterations(mu, L, alphas, stage, e0, d, s1, n, eps); got != bestT {
		t.Errorf("MASG: selected %d, brute force %d", got, bestT)
	}
}

// masgIterations returns the step size and stage (numbered from 1) of each
// of the T iterations of MASGStages(mu, L, 1, 1, T).
func masgIterations(mu, L float64, T int) ([]float64, []int) {
	lengths, stAlpha := MASGStages(mu, L, 1, 1, T)
	var alphas []float64
	var stage []int
	for k, nk := range lengths {
		for range nk {
			alphas = append(alphas, stAlpha[k])
			stage = append(stage, k+1)
		}
	}
	return alphas, stage
}
