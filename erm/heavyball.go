package erm

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// HeavyBall is DP-SHB, Polyak's heavy ball with Laplace noise (eq. 9 of the
// DP accelerated methods paper):
//
//	x_{t+1} = x_t − α (∇F_B(x_t) + η_t) + β (x_t − x_{t−1}),  x_{−1} = x_0,
//
// with α = c/L and the uniform budget split of Proposition 3.1. The paper
// does not state β for its experiments; its code uses NAG's rule
// β = (1 − √(αμ))/(1 + √(αμ)), the default here (digest §2.3).
type HeavyBall struct {
	LaplaceSettings
	// Momentum is β ∈ (0, 1); 0 means NAG's rule above.
	Momentum float64
}

// Solve runs DP-SHB.
func (a *HeavyBall) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	r, err := a.setup(p)
	if err != nil {
		return nil, err
	}
	beta := a.Momentum
	if beta == 0 {
		beta = nesterovMomentum(r.alpha, r.mu)
	}
	if !(beta > 0 && beta < 1) {
		return nil, fmt.Errorf("erm: Momentum = %v: must be in (0, 1): %w", a.Momentum, ErrInvalid)
	}
	T := a.Iterations
	b, _ := UniformLaplaceScale(r.s1, a.Epsilon, T, r.n, r.m)
	sched := momentumSchedule{alpha: constant(r.alpha, T), beta: constant(beta, T), b: constant(b, T), reset: make([]bool, T), heavyBall: true}
	x := runMomentum(p, rng, &a.LaplaceSettings, r.m, sched)
	return laplaceResult(x, r.s1, sched.b, r.n, r.m,
		fmt.Sprintf("Laplace b = %.4g uniform over T = %d, α = %.4g, β = %.4g", b, T, r.alpha, beta)), nil
}

// HeavyBallOptimal returns Polyak's classical parameters for a quadratic
// with Hessian eigenvalues in [μ, L]: α = 4/(√μ + √L)², β = ((√κ − 1)/(√κ + 1))².
func HeavyBallOptimal(mu, L float64) (alpha, beta float64) {
	s := math.Sqrt(mu) + math.Sqrt(L)
	k := math.Sqrt(L / mu)
	return 4 / (s * s), ((k - 1) / (k + 1)) * ((k - 1) / (k + 1))
}

// HeavyBallRate returns ρ, the largest spectral radius over the eigenvalues λ
// of T_λ = [[1 + β − αλ, −β], [1, 0]], i.e. the largest root modulus of
// z² − (1 + β − αλ) z + β = 0 (Theorem 3.5 with the characteristic
// polynomial of appendix B.3: the theorem's printed roots are NAG's, digest
// §2.3). The extreme eigenvalues μ and L suffice for a quadratic on [μ, L].
func HeavyBallRate(alpha, beta float64, eigs []float64) float64 {
	var rho float64
	for _, lam := range eigs {
		tr := 1 + beta - alpha*lam
		disc := tr*tr - 4*beta
		var r float64
		if disc < 0 {
			r = math.Sqrt(beta) // complex pair of modulus √(det) = √β
		} else {
			sq := math.Sqrt(disc)
			r = max(math.Abs(tr+sq), math.Abs(tr-sq)) / 2
		}
		rho = max(rho, r)
	}
	return rho
}

// HeavyBallStationary returns m(α, β)/σ² of Theorem 3.5,
// (1/2) Σ_i 2α(1 + β) / ((1 − β) λ_i (2 + 2β − αλ_i)): the trace of the
// stationary covariance of x − x* under heavy ball on a quadratic with
// Hessian eigenvalues eigs and gradient noise of covariance σ²I.
func HeavyBallStationary(alpha, beta float64, eigs []float64) float64 {
	var s float64
	for _, lam := range eigs {
		s += 2 * alpha * (1 + beta) / ((1 - beta) * lam * (2 + 2*beta - alpha*lam))
	}
	return s / 2
}
