package accountant

import (
	"fmt"
	"math"
)

// Private hyperparameter tuning: the Rényi DP of a search that runs a random
// number K of independent trials of one private mechanism Q and releases only
// the trial with the best quality score. Papernot and Steinke,
// "Hyperparameter Tuning with Renyi Differential Privacy" (ICLR 2022,
// arXiv:2110.03620), bound it from Q's own RDP when K is drawn from a
// truncated negative binomial distribution (Theorem 2) or from a Poisson
// distribution (Theorem 6). The formulas are cross-checked against the two
// public implementations, dp_accounting's _compute_rdp_repeat_and_select and
// autodp's RDP_selection, and the paper's Corollaries 3 and 4 in the tests.

// TrialDistribution is the family of the distribution of the number of trials.
type TrialDistribution int

const (
	// NegativeBinomial is the truncated negative binomial distribution of
	// Definition 1 of the paper, with shape η > −1 and γ in (0, 1):
	// P[K = k] = (1−γ)^k/(γ^(−η) − 1) · Π_{ℓ=0}^{k−1} (ℓ+η)/(ℓ+1) for k ≥ 1
	// (η = 0: the logarithmic distribution (1−γ)^k/(k·log(1/γ)); η = 1: the
	// geometric distribution γ(1−γ)^(k−1), mean 1/γ). K ≥ 1 always.
	NegativeBinomial TrialDistribution = iota
	// Poisson is the Poisson distribution with mean μ ≥ 1: K = 0, no trial and
	// nothing released, has probability e^(−μ).
	Poisson
)

// MaxTrialMean bounds the expected number of trials accepted: the formulas
// hold beyond it, but a search of more than ten thousand trainings expected
// is a mistake in the parameters, and drawing K costs O(K).
const MaxTrialMean = 1e4

// MinTrialGamma bounds γ of the truncated negative binomial from below: its tail
// reaches k ≈ 1/γ whatever the mean (with η < 0 the mean stays small while rare draws
// are huge), and drawing K costs O(K).
const MinTrialGamma = 1e-6

// Trials is the distribution of the number of trials of a search. Build it
// with NegativeBinomialTrials, GeometricTrials, LogarithmicTrials or
// PoissonTrials, which validate the parameters.
type Trials struct {
	Dist TrialDistribution
	// Eta (η > −1) and Gamma (γ in (0, 1)) are NegativeBinomial's parameters.
	Eta, Gamma float64
	// Mu is Poisson's mean μ ≥ 1.
	Mu float64
}

// NegativeBinomialTrials returns the truncated negative binomial distribution
// with shape eta > −1 and gamma in (0, 1).
func NegativeBinomialTrials(eta, gamma float64) (Trials, error) {
	d := Trials{Dist: NegativeBinomial, Eta: eta, Gamma: gamma}
	return d, d.Check()
}

// GeometricTrials returns the geometric distribution (η = 1) with the given
// mean ≥ 1: γ = 1/mean.
func GeometricTrials(mean float64) (Trials, error) {
	if !(mean > 1) || mean > MaxTrialMean {
		return Trials{}, fmt.Errorf("accountant: geometric number of trials with mean %v: the mean must be in (1, %g]: %w", mean, float64(MaxTrialMean), ErrInvalidParameter)
	}
	return NegativeBinomialTrials(1, 1/mean)
}

// LogarithmicTrials returns the logarithmic distribution (η = 0) with gamma in
// (0, 1); its mean is (1/γ − 1)/log(1/γ).
func LogarithmicTrials(gamma float64) (Trials, error) {
	return NegativeBinomialTrials(0, gamma)
}

// PoissonTrials returns the Poisson distribution with mean mu ≥ 1.
func PoissonTrials(mu float64) (Trials, error) {
	d := Trials{Dist: Poisson, Mu: mu}
	return d, d.Check()
}

// Check reports parameters outside the theorems' domains (or a mean above
// MaxTrialMean).
func (d Trials) Check() error {
	switch d.Dist {
	case NegativeBinomial:
		if !(d.Eta > -1) || math.IsInf(d.Eta, 1) {
			return fmt.Errorf("accountant: truncated negative binomial shape η = %v: must be a finite number > −1: %w", d.Eta, ErrInvalidParameter)
		}
		if !(d.Gamma > 0 && d.Gamma < 1) {
			return fmt.Errorf("accountant: truncated negative binomial γ = %v: must be in (0, 1): %w", d.Gamma, ErrInvalidParameter)
		}
		if d.Gamma < MinTrialGamma {
			return fmt.Errorf("accountant: truncated negative binomial γ = %v: must be at least %g (K reaches about 37/γ with probability 1e−16): %w", d.Gamma, MinTrialGamma, ErrInvalidParameter)
		}
		if m := d.Mean(); !(m <= MaxTrialMean) {
			return fmt.Errorf("accountant: truncated negative binomial with η = %v, γ = %v has mean %.4g trials, above %g: raise γ: %w", d.Eta, d.Gamma, m, float64(MaxTrialMean), ErrInvalidParameter)
		}
		return nil
	case Poisson:
		// Theorem 6 needs no lower bound on μ, but log μ < 0 below 1 and a
		// search that usually runs no trial is no search; dp_accounting also
		// asks for a mean ≥ 1.
		if !(d.Mu >= 1 && d.Mu <= MaxTrialMean) {
			return fmt.Errorf("accountant: Poisson number of trials with mean μ = %v: must be in [1, %g]: %w", d.Mu, float64(MaxTrialMean), ErrInvalidParameter)
		}
		return nil
	}
	return fmt.Errorf("accountant: unknown trial distribution %d: %w", int(d.Dist), ErrInvalidParameter)
}

// Mean returns E[K]: μ for Poisson; for the truncated negative binomial
// η(1−γ)/(γ(1−γ^η)), and (1/γ − 1)/log(1/γ) at η = 0 (Section 2 of the
// paper), computed without cancellation near η = 0 and γ = 1.
func (d Trials) Mean() float64 {
	if d.Dist == Poisson {
		return d.Mu
	}
	logG := math.Log(d.Gamma)
	// (1−γ)/(−log γ): log γ/(γ − 1) inverted.
	ratio := -math.Expm1(logG) / -logG
	if d.Gamma > 0.5 {
		ratio = -(d.Gamma - 1) / -math.Log1p(d.Gamma-1)
	}
	if d.Eta == 0 {
		return ratio / d.Gamma
	}
	// η(1−γ)/(γ(1−γ^η)) = (1−γ)/(−log γ) · (η·(−log γ))/(1 − e^(η log γ)) / γ.
	x := d.Eta * logG
	return ratio * (-x / -math.Expm1(x)) / d.Gamma
}

// String describes the distribution: "geometric (mean 8)", "Poisson (mean 8)",
// "truncated negative binomial (η = 0.5, γ = 0.05, mean 12.1)".
func (d Trials) String() string {
	switch {
	case d.Dist == Poisson:
		return fmt.Sprintf("Poisson (mean %g)", d.Mu)
	case d.Eta == 1:
		return fmt.Sprintf("geometric (γ = %.4g, mean %.4g)", d.Gamma, d.Mean())
	case d.Eta == 0:
		return fmt.Sprintf("logarithmic (γ = %.4g, mean %.4g)", d.Gamma, d.Mean())
	}
	return fmt.Sprintf("truncated negative binomial (η = %g, γ = %.4g, mean %.4g)", d.Eta, d.Gamma, d.Mean())
}

// Draw returns the number of trials at the uniform variate u in [0, 1): the
// smallest k with P[K ≤ k] > u (the inverse of the distribution function), so
// that a uniform u gives K with the distribution d. The probabilities follow
// the recursions P[k+1] = P[k]·(1−γ)(k+η)/(k+1) and P[k+1] = P[k]·μ/(k+1);
// once they fall below e^(−700) past the mean, the k reached is returned (what
// is left of the tail is negligible).
func (d Trials) Draw(u float64) int {
	// In log space: e^(−μ) underflows for μ > 745.
	var k int
	var logP float64
	if d.Dist == Poisson {
		k, logP = 0, -d.Mu
	} else {
		k = 1
		if d.Eta == 0 {
			logP = math.Log(1-d.Gamma) - math.Log(-math.Log(d.Gamma))
		} else {
			logP = math.Log((1 - d.Gamma) * d.Eta / math.Expm1(-d.Eta*math.Log(d.Gamma)))
		}
	}
	mean := d.Mean()
	cum := math.Exp(logP)
	for cum <= u {
		if d.Dist == Poisson {
			logP += math.Log(d.Mu / float64(k+1))
		} else {
			logP += math.Log((1 - d.Gamma) * (float64(k) + d.Eta) / float64(k+1))
		}
		k++
		if logP < -700 && float64(k) > mean {
			return k
		}
		cum += math.Exp(logP)
	}
	return k
}

// TuningRDP returns the Rényi DP, at each of orders, of the search that runs
// K ~ d independent trials of a mechanism Q whose RDP at orders[i] is
// trialRDP[i], and releases the output of the trial with the best score (and
// nothing else: neither K nor the other trials). Q must release its score
// with its output, privately: trialRDP covers both.
//
// Truncated negative binomial (Theorem 2 of Papernot and Steinke 2022): for
// every order λ and every λ̂ ≥ 1,
//
//	ε′(λ) = ε(λ) + (1+η)(1 − 1/λ̂)ε(λ̂) + (1+η)·log(1/γ)/λ̂ + log E[K]/(λ − 1),
//
// and λ̂ is chosen among orders to minimise it.
//
// Poisson (Theorem 6): if Q is (λ, ε(λ))-RDP and (ε̂, δ̂)-DP with
// ε̂ ≤ log(1 + 1/(λ−1)), the search is (λ, ε(λ) + μδ̂ + log μ/(λ − 1))-RDP;
// δ̂ is Q's δ at ε̂ = log(1 + 1/(λ−1)) by conv over Q's RDP curve (the least
// δ̂ allowed, as δ̂ falls as ε̂ grows).
//
// Then, since RDP grows with the order, each order's bound is lowered to the
// least bound of the orders above it (as dp_accounting does). Orders must lie
// in (1, MaxOrder], and trialRDP be ≥ 0 (+Inf is allowed: no bound at that
// order).
func TuningRDP(d Trials, orders, trialRDP []float64, conv Conversion) ([]float64, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	if err := checkTrialCurve(orders, trialRDP); err != nil {
		return nil, err
	}
	if !conv.valid() {
		return nil, conv.invalidError()
	}
	out := make([]float64, len(orders))
	logMean := math.Log(d.Mean())
	switch d.Dist {
	case NegativeBinomial:
		// The λ̂ term does not depend on λ: minimise it once.
		c := math.Inf(1)
		logInvGamma := -math.Log(d.Gamma)
		for j, lh := range orders {
			c = min(c, (1-1/lh)*trialRDP[j]+logInvGamma/lh)
		}
		c *= 1 + d.Eta
		for i, l := range orders {
			out[i] = trialRDP[i] + c + logMean/(l-1)
		}
	case Poisson:
		for i, l := range orders {
			epsHat := math.Log1p(1 / (l - 1))
			deltaHat := deltaFromRDP(orders, trialRDP, epsHat, conv).Delta
			out[i] = trialRDP[i] + d.Mu*deltaHat + logMean/(l-1)
		}
	}
	// Monotonicity in the order: D_λ ≤ D_λ′ for λ ≤ λ′.
	idx := sortedIndex(orders)
	least := math.Inf(1)
	for k := len(idx) - 1; k >= 0; k-- {
		i := idx[k]
		least = min(least, out[i])
		out[i] = least
	}
	return out, nil
}

// TuningEpsilon returns the (ε, δ) guarantee of the search of TuningRDP at
// delta, converted by conv and minimised over orders.
func TuningEpsilon(d Trials, orders, trialRDP []float64, delta float64, conv Conversion) (Spent, error) {
	if err := checkDelta(delta); err != nil {
		return Spent{}, err
	}
	rdp, err := TuningRDP(d, orders, trialRDP, conv)
	if err != nil {
		return Spent{}, err
	}
	sorted, err := checkOrders(orders)
	if err != nil {
		return Spent{}, err
	}
	// epsilonFromRDP reports the edge by position: hand it the orders sorted.
	byOrder := make(map[float64]float64, len(orders))
	for i, a := range orders {
		byOrder[a] = rdp[i]
	}
	aligned := make([]float64, len(sorted))
	for i, a := range sorted {
		aligned[i] = byOrder[a]
	}
	return epsilonFromRDP(sorted, aligned, delta, conv), nil
}

// EpsilonFromRDP returns the (ε, δ) guarantee at delta of a mechanism whose
// RDP at orders[i] is rdp[i], converted by conv and minimised over orders (the
// conversion every Ledger uses).
func EpsilonFromRDP(orders, rdp []float64, delta float64, conv Conversion) (Spent, error) {
	if err := checkDelta(delta); err != nil {
		return Spent{}, err
	}
	if err := checkTrialCurve(orders, rdp); err != nil {
		return Spent{}, err
	}
	if !conv.valid() {
		return Spent{}, conv.invalidError()
	}
	idx := sortedIndex(orders)
	o, r := make([]float64, len(idx)), make([]float64, len(idx))
	for k, i := range idx {
		o[k], r[k] = orders[i], rdp[i]
	}
	return epsilonFromRDP(o, r, delta, conv), nil
}

// checkTrialCurve checks an RDP curve: as many values as orders, orders in
// (1, MaxOrder] without duplicates, values ≥ 0 and not NaN.
func checkTrialCurve(orders, rdp []float64) error {
	if len(orders) == 0 || len(orders) != len(rdp) {
		return fmt.Errorf("accountant: RDP curve with %d orders and %d values: want as many values as orders, at least one: %w", len(orders), len(rdp), ErrInvalidParameter)
	}
	seen := make(map[float64]bool, len(orders))
	for i, a := range orders {
		if err := checkOrder(a); err != nil {
			return err
		}
		if seen[a] {
			return fmt.Errorf("accountant: Rényi order %v given twice: %w", a, ErrInvalidParameter)
		}
		seen[a] = true
		if !(rdp[i] >= 0) {
			return fmt.Errorf("accountant: RDP %v at order %v: must be ≥ 0: %w", rdp[i], a, ErrInvalidParameter)
		}
	}
	return nil
}

// sortedIndex returns the indices of orders by increasing order.
func sortedIndex(orders []float64) []int {
	idx := make([]int, len(orders))
	for i := range idx {
		idx[i] = i
	}
	// Insertion sort: order lists are short and usually sorted already.
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && orders[idx[j]] < orders[idx[j-1]]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	return idx
}
