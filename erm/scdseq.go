package erm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/privrand"
)

// SequentialSCD is seqDP-SCD, the baseline of the DP-SCD paper (Algorithm 3,
// Appendix C; digest §5.4): like SCD, but the L coordinate steps of a round
// are applied one after the other, each seeing the previous ones. The
// correlation raises the sensitivity of a round of b examples to 2C√(b(b+1))
// (Lemma 5), and that much noise (times σ) goes on the touched α_j and on v
// once per round, with b the most examples a round processes: L for shuffled
// batches; for Poisson batches, whose size varies, a cap about L + 5√L that a
// batch exceeds with probability 1e-6 (seqPlan). A round whose batch exceeds
// the cap updates nothing and releases its noise only: with or without one
// example, for the same coins of the others, the round's mean output then
// moves by at most C√(b(b+1)) (a processed batch against a skipped one) or
// Lemma 5's bound (both processed), so the sensitivity holds.
//
// Each step minimises subproblem (8) with σ' = 1, i.e. exactly, as plain
// sequential SDCA does: the σ' = L scaling of (8) exists to make independent
// parallel steps safe, which sequential steps do not need. (The paper writes
// G*_j without restating σ'; this is our reading.)
type SequentialSCD struct {
	Epsilon, Delta    float64
	Epochs, BatchSize int
	Clip              float64
	NewtonSteps       int
	Box               float64
	Sampling          Sampling
	AccountantOptions []accountant.Option
}

// Solve runs seqDP-SCD and releases θ = v/(λN).
func (a *SequentialSCD) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	n := p.Len()
	c, err := checkSCD(p, a.Epsilon, a.Delta, a.Epochs, a.BatchSize, a.Clip, n)
	if err != nil {
		return nil, err
	}
	box := a.Box
	if box == 0 {
		box = 1e-4
	}
	q := float64(c.batch) / float64(n)
	sigma, achieved, err := scdNoise(q, c.rounds, a.Epsilon, a.Delta, a.AccountantOptions)
	if err != nil {
		return nil, err
	}
	maxBatch, sens := seqPlan(a.Sampling, n, c.batch, c.clip, sigma > 0)
	std := sens * sigma
	st := newDualState(p)
	draw := newBatchDrawer(a.Sampling, n, c.batch)
	for range c.rounds {
		batch := draw.next(rng)
		st.seqRound(batch, maxBatch, c.clip, box, a.NewtonSteps)
		if std > 0 {
			privrand.AddGaussianAt(rng, st.alpha, batch, std)
			privrand.AddGaussian(rng, st.v, std)
		}
	}
	return &Result{
		X:          st.theta(),
		Epsilon:    achieved,
		Delta:      gaussianDelta(a.Epsilon, a.Delta),
		Iterations: c.rounds,
		Calibration: fmt.Sprintf("Gaussian std 2C√(b(b+1))·σ = %.4g (σ = %.4g, C = %g, b = %d, the most examples a round processes) on α_B and v, q = %d/%d, T = %d rounds, %s",
			std, sigma, c.clip, maxBatch, c.batch, n, c.rounds, samplingNote(a.Sampling)),
	}, nil
}

// seqRound applies the L coordinate steps of one seqDP-SCD round one after the
// other, each seeing the previous ones, unless the batch holds more than
// maxBatch examples.
func (st *dualState) seqRound(batch []int, maxBatch int, clip, box float64, newtonSteps int) {
	if len(batch) > maxBatch {
		return
	}
	for _, i := range batch {
		z := clipStep(st.zeta(i, 1, box, newtonSteps), clip)
		st.alpha[i] += z
		floats.AddScaled(st.v, z, st.p.Data.X.RawRowView(i))
	}
}

// seqSensitivity is Lemma 5's 2C√(b(b+1)) for rounds of at most b examples.
func seqSensitivity(clip float64, b int) float64 {
	return 2 * clip * math.Sqrt(float64(b)*float64(b+1))
}

// seqCapTail is the probability, per round, that a Poisson batch exceeds the
// cap of seqPlan and its round is skipped: at 1e-6 a run of 10⁴ rounds skips
// one with probability about 1 %.
const seqCapTail = 1e-6

// seqPlan returns the most examples a seqDP-SCD round processes and the
// sensitivity its noise is sized for, Lemma 5's 2C√(b(b+1)) at that cap b:
// the noise has to cover every batch a round may process, and a Poisson batch
// can exceed L. Shuffled batches hold exactly L. For Poisson batches the cap
// is the smallest b with P(Binomial(N, L/N) > b) ≤ seqCapTail, fixed before
// any data is seen (about L + 5√L: 27 at L = 10, N = 120; 148 at L = 100,
// N = 1000; 1153 at L = 1000, N = 10⁵, 15 % more noise than L would get).
// Without noise nothing is capped.
func seqPlan(s Sampling, n, L int, clip float64, noisy bool) (maxBatch int, sens float64) {
	switch {
	case !noisy:
		maxBatch = n
	case s == Shuffled:
		maxBatch = L
	default:
		poisson, err := privrand.NewPoisson(n, float64(L)/float64(n))
		if err != nil { // not reachable: checkSCD keeps 1 ≤ L ≤ n
			panic("erm: " + err.Error())
		}
		maxBatch = poisson.BatchBound(seqCapTail)
	}
	return maxBatch, seqSensitivity(clip, maxBatch)
}
