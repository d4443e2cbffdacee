package erm

import (
	"math"
)

// The optimal noise split of the DP accelerated methods paper (Sec. 4.1,
// Proposition 4.2; digest §2.4). Its error bounds have the form (29)
//
//	E_T ≤ a_{T,0} E_0 + Σ_{t=1..T} a_{T,t} (b_t² d + σ_s²/2),
//
// and minimising Σ a_{T,t} b_t² subject to Σ_t S1/(n b_t) = ε gives
// ε_t ∝ a_{T,t}^{1/3}. a_{T,t} grows with t (the paper's text says
// "decreasing", but its conclusion, more noise early, is what the formula
// gives; digest §2.4), so the budget is spent mostly late.

// NAGWeights returns the coefficients of (29) for DP-NAG with step size
// alpha: a0 = (1 − √(μα))^T and a[t−1] = (1 − √(μα))^{T−t}·α(1 + αL) for
// t = 1..T (Theorem 4.1). The authors' code has an extra factor 1/2 in a_t,
// which changes the re-selected T but not the split; the paper's form is
// used here.
func NAGWeights(mu, L, alpha float64, T int) (a0 float64, a []float64) {
	r := 1 - math.Sqrt(mu*alpha)
	c := alpha * (1 + alpha*L)
	a = make([]float64, T)
	for t := 1; t <= T; t++ {
		a[t-1] = math.Pow(r, float64(T-t)) * c
	}
	return math.Pow(r, float64(T)), a
}

// OptimalSplit returns the per-iteration budgets of Proposition 4.2,
// ε_t = a_t^{1/3} / Σ_j a_j^{1/3} · ε, which sum to ε.
func OptimalSplit(a []float64, eps float64) []float64 {
	var s float64
	for _, v := range a {
		s += math.Cbrt(v)
	}
	out := make([]float64, len(a))
	for t, v := range a {
		out[t] = math.Cbrt(v) / s * eps
	}
	return out
}

// OptimalBound returns the right side of (32) at the optimal split,
// a0·E0 + d·S1²/(n ε)²·(Σ_j a_j^{1/3})³, the quantity minimised over T by the
// re-selection of Remark 4.1.
func OptimalBound(a0 float64, a []float64, e0 float64, d int, s1 float64, n int, eps float64) float64 {
	var s float64
	for _, v := range a {
		s += math.Cbrt(v)
	}
	k := s1 / (float64(n) * eps)
	return a0*e0 + float64(d)*k*k*s*s*s
}

// NoiseTerm returns d·Σ_t a_t b_t², the Laplace part of the bound (29) for
// scales b (variance 2b² per coordinate enters the paper's bound as b²d).
func NoiseTerm(a, b []float64, d int) float64 {
	var s float64
	for t := range a {
		s += a[t] * b[t] * b[t]
	}
	return float64(d) * s
}

// selectIterations implements Remark 4.1: among T' = 1..maxT it returns the
// T' minimising a_{T',0}·E0 + d·S1²/(nε)²·(Σ_j a_{T',j}^{1/3})³. The weights
// of T'+1 follow from those of T' by one contraction factor, so the scan is
// linear: alphas[t] is iteration t+1's step size and stage[t] its stage
// (all 1 for plain DP-NAG), and the weights are those of Theorem 4.3.
func selectIterations(mu, L float64, alphas []float64, stage []int, e0 float64, d int, s1 float64, n int, eps float64) int {
	k := s1 / (float64(n) * eps)
	noise := float64(d) * k * k
	best, bestT := math.Inf(1), 1
	a0 := 1.0
	var sumCbrt float64 // Σ_j a_{T',j}^{1/3}
	prevStage := 1      // s_0: iteration 0 belongs to the first stage
	for t := range alphas {
		f := 1 - math.Sqrt(mu*alphas[t])
		if stage[t] != prevStage {
			f *= math.Exp2(float64(stage[t] - prevStage))
		}
		prevStage = stage[t]
		a0 *= f
		sumCbrt = sumCbrt*math.Cbrt(f) + math.Cbrt(alphas[t]*(1+alphas[t]*L))
		if b := a0*e0 + noise*sumCbrt*sumCbrt*sumCbrt; b < best {
			best, bestT = b, t+1
		}
	}
	return bestT
}

// StageWeights returns the coefficients of Theorem 4.3 (eq. 34) for a run
// whose iteration t = 1..T has step size alphas[t−1] and belongs to stage
// stage[t−1] (stages numbered from 1, iteration 0 in stage 1):
//
//	a_{T,t} = 2^{s_T − s_t} Π_{i=t+1..T} (1 − √(μ α_i)) · α_t (1 + α_t L),
//	a_{T,0} = 2^{s_T − s_0} Π_{i=1..T} (1 − √(μ α_i)).
//
// With a single stage and constant α it reduces to NAGWeights.
func StageWeights(mu, L float64, alphas []float64, stage []int) (a0 float64, a []float64) {
	T := len(alphas)
	a = make([]float64, T)
	prod := 1.0 // 2^{s_T − s_t} Π_{i=t+1..T}(1 − √(μα_i)) for the current t
	for t := T; t >= 1; t-- {
		at := alphas[t-1]
		a[t-1] = prod * at * (1 + at*L)
		prevStage := 1
		if t >= 2 {
			prevStage = stage[t-2]
		}
		prod *= (1 - math.Sqrt(mu*at)) * math.Exp2(float64(stage[t-1]-prevStage))
	}
	return prod, a
}
