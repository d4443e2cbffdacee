package erm

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MASG is DP-MASG, the multi-stage accelerated method of Aybat et al. with
// Laplace noise (Sec. 4.2 of the DP accelerated methods paper): NAG run in
// stages of growing length and shrinking step size (eq. 33, see MASGStages),
// the momentum memory reset at each stage boundary as in the authors' code.
//
// With Optimal false the budget is split evenly; with Optimal true it is
// DP-MASG-opt: Proposition 4.2's split with the weights of Theorem 4.3 (see
// StageWeights) and, unless KeepIterations, T re-selected by Remark 4.1.
type MASG struct {
	LaplaceSettings
	Optimal        bool
	KeepIterations bool
	// InitialGap is the guess E_0 for the re-selection of T; 0 means 10.
	InitialGap float64
	// P is the p ≥ 1 of eq. (33); 0 means 1, the paper's value.
	P int
}

// MASGStages returns the stage lengths and step sizes of eq. (33) for a run
// of T iterations, with the authors' choices where the paper leaves freedom
// (digest §2.5): stage 1 has length min(T, ⌈2√κ log √κ⌉) (at least 1) and
// step c/L; stage k ≥ 2 has length 2^k·⌈√κ log 2^{p+2}⌉ and step
// c/(2^{2k} L). The last stage is cut so that the lengths sum to T.
func MASGStages(mu, L, c float64, p, T int) (lengths []int, alphas []float64) {
	sk := math.Sqrt(L / mu)
	first := max(1, int(math.Ceil(2*sk*math.Log(sk))))
	base := int(math.Ceil(sk * math.Log(math.Exp2(float64(p+2)))))
	left := T
	for k := 1; left > 0; k++ {
		n, a := first, c/L
		if k >= 2 {
			n, a = (1<<k)*base, c/(math.Exp2(float64(2*k))*L)
		}
		n = min(n, left)
		lengths = append(lengths, n)
		alphas = append(alphas, a)
		left -= n
	}
	return lengths, alphas
}

// Solve runs DP-MASG or DP-MASG-opt.
func (a *MASG) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	r, err := a.setup(p)
	if err != nil {
		return nil, err
	}
	pp := a.P
	if pp == 0 {
		pp = 1
	}
	if pp < 1 {
		return nil, fmt.Errorf("erm: P = %d: must be ≥ 1: %w", a.P, ErrInvalid)
	}
	lengths, stageAlpha := MASGStages(r.mu, r.L, a.stepMult(), pp, a.Iterations)
	var (
		alphas, betas []float64
		stage         []int
		reset         []bool
	)
	for k, nk := range lengths {
		al := stageAlpha[k]
		be := nesterovMomentum(al, r.mu)
		for i := range nk {
			alphas = append(alphas, al)
			betas = append(betas, be)
			stage = append(stage, k+1)
			reset = append(reset, i == 0 && k > 0)
		}
	}
	T := a.Iterations
	if a.Optimal && !a.KeepIterations && !math.IsInf(a.Epsilon, 1) {
		T = selectIterations(r.mu, r.L, alphas, stage, initialGap(a.InitialGap), p.Dim(), r.s1, r.n, a.Epsilon)
	}
	sched := momentumSchedule{alpha: alphas[:T], beta: betas[:T], reset: reset[:T]}
	var what string
	if a.Optimal {
		_, w := StageWeights(r.mu, r.L, alphas[:T], stage[:T])
		sched.b = splitScales(w, a.Epsilon, r.s1, r.n, r.m)
		what = fmt.Sprintf("Laplace b_t from %.4g to %.4g (Prop. 4.2 split, Thm 4.3 weights), T = %d of %d in %d stages", sched.b[0], sched.b[T-1], T, a.Iterations, stage[T-1])
	} else {
		b, _ := UniformLaplaceScale(r.s1, a.Epsilon, T, r.n, r.m)
		sched.b = constant(b, T)
		what = fmt.Sprintf("Laplace b = %.4g uniform over T = %d in %d stages", b, T, stage[T-1])
	}
	x := runMomentum(p, rng, &a.LaplaceSettings, r.m, sched)
	return laplaceResult(x, r.s1, sched.b, r.n, r.m, what), nil
}
