package dpoptim

import (
	"fmt"
	"math"
	"slices"
)

// IterateAverage is the averaged output of DP-LSSGD's utility theorems (Wang, Gu,
// Boedihardjo, Barekat, Osher, "DP-LSSGD: A Stochastic Optimization Method to Lift the
// Utility in Privacy-Preserving ERM"): with θ₀ the parameters before the first step and
// θ_k those after step k, after T steps it is
//
//	θ̃_T = Σ_{k=0}^{T−1} w_k·θ_k / Σ_{k=0}^{T−1} w_k
//
// with w_k = η_k, the step size of step k (Weights; Theorem 2, convex objectives), or
// w_k = 1 (Weights nil; Theorem 3, non-convex, as printed). The last iterate θ_T is not in
// it, as in the theorems (the sums run to T−1). Before any step the average is θ₀; while every
// weight so far is 0 (a warm-up from rate 0) it is the newest iterate θ_T.
//
// It reads nothing but the parameters that the steps have released (and the fixed
// weights), so it is post-processing of the noisy iterates and costs no privacy. For a
// non-convex objective the proof of Theorem 3 bounds the mean of E‖∇F(θ_k)‖² over k, which
// is the guarantee of a uniformly random iterate θ_k, k < T, not of the averaged point:
// the uniform average here is the theorem's output as printed, with no guarantee of its
// own for non-convex F (seeds digest §1.3 [FLAG]).
type IterateAverage struct {
	// Weights, if not nil, gives iterate θ_k the weight Weights.Rate(k) (the step size
	// with which step k left θ_k); nil weights every iterate 1. Rates must be finite and
	// ≥ 0.
	Weights Schedule

	steps int       // updates folded in: the iterates θ_0 … θ_{steps−1} are in avg
	sum   float64   // Σ_{k<steps} w_k
	avg   []float64 // the weighted mean of θ_0 … θ_{steps−1}; nil while sum = 0
	last  []float64 // θ_steps, the newest iterate, not yet in the average
}

// Name returns "iterate average (uniform)" or "iterate average (step-weighted)".
func (a *IterateAverage) Name() string {
	if a.Weights == nil {
		return "iterate average (uniform)"
	}
	return "iterate average (step-weighted)"
}

// Init starts the average at params, θ₀, with no step taken. It returns an error for a
// non-finite parameter and then leaves a unchanged.
func (a *IterateAverage) Init(params []float64) error {
	if i := firstNonFinite(params); i >= 0 {
		return fmt.Errorf("%w: %s: initial parameter [%d] = %v", ErrNonFinite, a.Name(), i, params[i])
	}
	a.steps, a.sum, a.avg, a.last = 0, 0, nil, slices.Clone(params)
	return nil
}

// Started says whether Init has given the average its start.
func (a *IterateAverage) Started() bool { return a.last != nil }

// Steps returns the number of updates since Init (T).
func (a *IterateAverage) Steps() int { return a.steps }

// weight returns w_k.
func (a *IterateAverage) weight(k int) (float64, error) {
	if a.Weights == nil {
		return 1, nil
	}
	w := a.Weights.Rate(k)
	if !(w >= 0) || math.IsInf(w, 1) {
		return 0, fmt.Errorf("%w: %s: weight (step size) %v of iterate %d, want finite and ≥ 0", ErrConfig, a.Name(), w, k)
	}
	return w, nil
}

// Update takes params, the parameters after one more step (θ_{T+1}), folds the previous
// newest iterate θ_T into the average with its weight w_T, and keeps params as the newest.
// It returns an error, and leaves a unchanged, before Init, for a length that is not the
// average's, a non-finite parameter or an invalid weight.
func (a *IterateAverage) Update(params []float64) error {
	if a.last == nil {
		return fmt.Errorf("%w: %s: Update before Init", ErrConfig, a.Name())
	}
	if len(params) != len(a.last) {
		return fmt.Errorf("%w: %s: average of %d parameters, got %d", ErrLength, a.Name(), len(a.last), len(params))
	}
	if i := firstNonFinite(params); i >= 0 {
		return fmt.Errorf("%w: %s: parameter [%d] = %v after step %d", ErrNonFinite, a.Name(), i, params[i], a.steps+1)
	}
	w, err := a.weight(a.steps)
	if err != nil {
		return err
	}
	if w > 0 {
		a.sum += w
		if a.avg == nil {
			a.avg = slices.Clone(a.last)
		} else {
			f := w / a.sum
			for i, x := range a.last {
				a.avg[i] += f * (x - a.avg[i])
			}
		}
	}
	a.steps++
	copy(a.last, params)
	return nil
}

// Average copies θ̃_T into dst, which must have the parameters' length; before Init it
// returns an error.
func (a *IterateAverage) Average(dst []float64) error {
	if a.last == nil {
		return fmt.Errorf("%w: %s: no average before Init", ErrConfig, a.Name())
	}
	if len(dst) != len(a.last) {
		return fmt.Errorf("%w: %s: average of %d parameters into %d", ErrLength, a.Name(), len(a.last), len(dst))
	}
	if a.avg == nil {
		copy(dst, a.last)
		return nil
	}
	copy(dst, a.avg)
	return nil
}
