package erm

import (
	"fmt"
	"math"
)

// Pure ε-DP Laplace calibration of the DP accelerated methods paper (Kuru et
// al.; digest §2.2). Each iteration releases a mini-batch gradient of m of
// the n examples (drawn without replacement) plus iid Laplace(b) noise per
// coordinate. One example changes the batch mean by at most S1/m in L1, so on
// the batch the release is (S1/(b m))-DP, and sampling m of n amplifies it to
// eq. (11). Iterations compose by adding their ε (Theorem A.2).

// PerStepEpsilon returns the privacy loss of one iteration with Laplace scale
// b, eq. (11): ε_t = log((exp(S1/(b m)) − 1)·m/n + 1), which is S1/(b n) when
// m = n. b = 0 gives +Inf.
func PerStepEpsilon(s1, b float64, n, m int) float64 {
	if b == 0 {
		return math.Inf(1)
	}
	return math.Log1p(math.Expm1(s1/(b*float64(m))) * float64(m) / float64(n))
}

// LaplaceScale inverts PerStepEpsilon: the scale b whose iteration costs
// epsT, b = (S1/m) / log((exp(ε_t) − 1)·n/m + 1) (the authors' inversion,
// digest §2.2). epsT = +Inf gives b = 0 (no noise).
func LaplaceScale(s1, epsT float64, n, m int) float64 {
	if math.IsInf(epsT, 1) {
		return 0
	}
	return s1 / float64(m) / math.Log1p(math.Expm1(epsT)*float64(n)/float64(m))
}

// UniformLaplaceScale splits eps evenly over T iterations (Proposition 3.1):
// ε0 = log(1 + (exp(ε/T) − 1)·n/m) is the per-iteration loss on the batch and
// b = S1/(m ε0). eps = +Inf gives b = 0.
func UniformLaplaceScale(s1, eps float64, T, n, m int) (b, eps0 float64) {
	if math.IsInf(eps, 1) {
		return 0, math.Inf(1)
	}
	eps0 = math.Log1p(math.Expm1(eps/float64(T)) * float64(n) / float64(m))
	return s1 / (float64(m) * eps0), eps0
}

// laplaceSettings validates the shared inputs of the P1 methods and returns
// n, m and S1.
func laplaceSettings(p *Problem, eps float64, iters, batch int, s1 float64) (n, m int, sens float64, err error) {
	if err := p.Validate(); err != nil {
		return 0, 0, 0, err
	}
	if p.L1 != 0 || p.Radius != 0 {
		return 0, 0, 0, fmt.Errorf("erm: the accelerated methods take neither an L1 term nor a constraint: %w", ErrUnsupported)
	}
	if !(eps > 0) {
		return 0, 0, 0, fmt.Errorf("erm: ε = %v: must be > 0 (+Inf for no noise): %w", eps, ErrInvalid)
	}
	if iters < 1 {
		return 0, 0, 0, fmt.Errorf("erm: Iterations = %d: must be ≥ 1: %w", iters, ErrInvalid)
	}
	n = p.Len()
	m = batch
	if m == 0 {
		m = n
	}
	if m < 1 || m > n {
		return 0, 0, 0, fmt.Errorf("erm: BatchSize = %d: must be in [1, n = %d] (0 for n): %w", batch, n, ErrInvalid)
	}
	sens = s1
	if sens == 0 && !math.IsInf(eps, 1) {
		if sens, err = p.L1Sensitivity(); err != nil {
			return 0, 0, 0, err
		}
	}
	if !(sens >= 0) || math.IsInf(sens, 1) {
		return 0, 0, 0, fmt.Errorf("erm: Sensitivity = %v: must be a finite number > 0: %w", s1, ErrInvalid)
	}
	return n, m, sens, nil
}

// stepConstants returns the smoothness L and strong convexity μ, each from
// the override when positive and from the problem otherwise, and checks that
// the loss is smooth and μ > 0.
func stepConstants(p *Problem, smooth, strong float64) (L, mu float64, err error) {
	L, mu = smooth, strong
	if L == 0 {
		if math.IsInf(p.Loss.Smoothness(), 1) {
			return 0, 0, fmt.Errorf("erm: the %s loss is not smooth; the accelerated methods need an L-smooth objective: %w", p.Loss.Name(), ErrUnsupported)
		}
		L = p.Smoothness()
	}
	if mu == 0 {
		mu = p.StrongConvexity()
	}
	if !(L > 0) || math.IsInf(L, 1) || !(mu > 0) || mu > L {
		return 0, 0, fmt.Errorf("erm: need 0 < μ ≤ L < ∞, have μ = %v, L = %v (set Lambda > 0): %w", mu, L, ErrInvalid)
	}
	return L, mu, nil
}
