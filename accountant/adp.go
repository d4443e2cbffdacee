package accountant

import (
	"fmt"
	"math"
)

// This file holds the privacy calibration of the ADP-SGD paper (Wu, Wang,
// Cristali, Gu, Willett, "Adaptive differentially private empirical risk
// minimization"), for reproducing it: the extended advanced composition of
// its Lemma 2.2 and the noise of its Theorem 4.1 / C.1. The Ledger is the
// default; for the paper's settings it certifies the same noise at a several
// times smaller ε (seeds digest §3.3).

// ExtendedAdvancedComposition composes mechanisms that are (eps[i],
// deltas[i])-DP with eps[i], deltas[i] in (0, 1) (Lemma 2.2 of the ADP-SGD
// paper): for deltaPrime in (0, 1) the composition is (ε̃, δ̃)-DP with
//
//	ε̃ = √(Σ 2εᵢ² log(1/δ')) + Σ εᵢ(e^εᵢ − 1)/(e^εᵢ + 1),  δ̃ = 1 − Π(1 − δᵢ) + δ'.
//
// With equal εᵢ it is the advanced composition theorem of Dwork, Rothblum
// and Vadhan.
func ExtendedAdvancedComposition(eps, deltas []float64, deltaPrime float64) (epsTotal, deltaTotal float64, err error) {
	if len(eps) != len(deltas) {
		return 0, 0, fmt.Errorf("accountant: %d ε values for %d δ values: %w", len(eps), len(deltas), ErrInvalidParameter)
	}
	if len(eps) == 0 {
		return 0, 0, fmt.Errorf("accountant: no mechanisms to compose: %w", ErrInvalidParameter)
	}
	if err := checkDelta(deltaPrime); err != nil {
		return 0, 0, err
	}
	var sumSq, sumTanh, logKeep float64
	for i, e := range eps {
		d := deltas[i]
		if !(e > 0 && e < 1) {
			return 0, 0, fmt.Errorf("accountant: ε[%d] = %v: must be in (0, 1): %w", i, e, ErrInvalidParameter)
		}
		if !(d > 0 && d < 1) {
			return 0, 0, fmt.Errorf("accountant: δ[%d] = %v: must be in (0, 1): %w", i, d, ErrInvalidParameter)
		}
		sumSq += e * e
		sumTanh += e * math.Tanh(e/2) // (e^ε − 1)/(e^ε + 1) = tanh(ε/2)
		logKeep += math.Log1p(-d)
	}
	epsTotal = math.Sqrt(2*sumSq*math.Log(1/deltaPrime)) + sumTanh
	deltaTotal = -math.Expm1(logKeep) + deltaPrime
	return epsTotal, deltaTotal, nil
}

// ADPBDelta returns B_δ = log(16·T·m/(n·δ))·log(1.25/δ) of the ADP-SGD
// paper's Theorem C.1 for T steps (steps), mini-batch size m (batch) and n
// examples. batch = 1 gives the main-text Theorem 4.1 form log(16T/(nδ)).
func ADPBDelta(steps, batch, n int, delta float64) (float64, error) {
	if err := checkADPSizes(steps, batch, n); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	b := math.Log(16*float64(steps)*float64(batch)/(float64(n)*delta)) * math.Log(1.25/delta)
	if !(b > 0) {
		return 0, fmt.Errorf("accountant: B_δ = %v ≤ 0 (16·T·m/(n·δ) ≤ 1): %w", b, ErrInvalidParameter)
	}
	return b, nil
}

// ADPNoise returns the noise standard deviation σ of Theorem 4.1 / C.1 of
// the ADP-SGD paper (eq. (18)) for the step-size schedule alphas (α₁ … α_T,
// one per step; all ones is DP-SGD, Theorem A.1), n examples, mini-batch
// size batch, G-Lipschitz losses (lipschitz = G) and budget (eps, delta):
//
//	σ² = (16G)²·B_δ/(n²ε²)·Σ_t 1/α_t².
//
// Step t then adds α_t·c_t with c_t ~ N(0, σ²I) to the averaged clipped
// gradient (Algorithm 1, line 6). The paper's experiments plug in eps = 16·ε̄ (their "scaled"
// budget).
func ADPNoise(alphas []float64, n, batch int, lipschitz, eps, delta float64) (float64, error) {
	sumInvSq, err := adpSumInvSq(alphas)
	if err != nil {
		return 0, err
	}
	b, err := ADPBDelta(len(alphas), batch, n, delta)
	if err != nil {
		return 0, err
	}
	if err := checkEpsilon(eps); err != nil {
		return 0, err
	}
	if !(lipschitz > 0) || math.IsInf(lipschitz, 1) {
		return 0, fmt.Errorf("accountant: Lipschitz constant G = %v: must be a finite number > 0: %w", lipschitz, ErrInvalidParameter)
	}
	return 16 * lipschitz * math.Sqrt(b*sumInvSq) / (float64(n) * eps), nil
}

// ADPConditions checks the side conditions of the ADP-SGD paper's Theorem
// C.1 for the noise of ADPNoise: m < n/2, and every per-step Gaussian
// mechanism ε_t = (2G/m)·√(2 log(1.25/δ))/(α_t σ) at most 1 (step one of the
// proof, eq. (20); δ₀ = δ). The theorem's statement prints this last
// condition as α_t² Σ 1/α² ≥ n²ε²B_δ/(32m² log(1.25/δ₀)), which swaps B_δ
// and log(1.25/δ₀) relative to its own proof; the proof's form is checked.
// G cancels. It returns nil when all hold.
func ADPConditions(alphas []float64, n, batch int, eps, delta float64) error {
	sigma, err := ADPNoise(alphas, n, batch, 1, eps, delta)
	if err != nil {
		return err
	}
	if 2*batch >= n {
		return fmt.Errorf("accountant: ADP-SGD needs batch size m < n/2, got m = %d, n = %d: %w", batch, n, ErrInvalidParameter)
	}
	c := 2 / float64(batch) * math.Sqrt(2*math.Log(1.25/delta)) / sigma
	for t, a := range alphas {
		if et := c / a; et > 1 {
			return fmt.Errorf("accountant: ADP-SGD per-step ε at step %d is %.4g > 1 (α = %v): %w", t+1, et, a, ErrInvalidParameter)
		}
	}
	return nil
}

func adpSumInvSq(alphas []float64) (float64, error) {
	if len(alphas) == 0 {
		return 0, fmt.Errorf("accountant: empty step-size schedule: %w", ErrInvalidParameter)
	}
	s := 0.0
	for t, a := range alphas {
		if !(a > 0) || math.IsInf(a, 1) {
			return 0, fmt.Errorf("accountant: α[%d] = %v: must be a finite number > 0: %w", t, a, ErrInvalidParameter)
		}
		s += 1 / (a * a)
	}
	return s, nil
}

func checkADPSizes(steps, batch, n int) error {
	if steps < 1 {
		return fmt.Errorf("accountant: steps = %d: must be ≥ 1: %w", steps, ErrInvalidParameter)
	}
	if n < 1 {
		return fmt.Errorf("accountant: n = %d: must be ≥ 1: %w", n, ErrInvalidParameter)
	}
	if batch < 1 || batch > n {
		return fmt.Errorf("accountant: batch size m = %d: must be in [1, n = %d]: %w", batch, n, ErrInvalidParameter)
	}
	return nil
}
