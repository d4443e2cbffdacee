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
// correlation raises the sensitivity to 2C√(L(L+1)) (Lemma 5), and that much
// noise (times σ) goes on the touched α_j and on v once per round.
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
	L := float64(c.batch)
	std := 2 * c.clip * math.Sqrt(L*(L+1)) * sigma // Lemma 5
	st := newDualState(p)
	draw := newBatchDrawer(a.Sampling, n, c.batch)
	for range c.rounds {
		batch := draw.next(rng)
		for _, i := range batch {
			z := clipStep(st.zeta(i, 1, box, a.NewtonSteps), c.clip)
			st.alpha[i] += z
			floats.AddScaled(st.v, z, p.Data.X.RawRowView(i))
		}
		if std > 0 {
			privrand.AddGaussianAt(rng, st.alpha, batch, std)
			privrand.AddGaussian(rng, st.v, std)
		}
	}
	delta := a.Delta
	if math.IsInf(a.Epsilon, 1) {
		delta = 0
	}
	return &Result{
		X:          st.theta(),
		Epsilon:    achieved,
		Delta:      delta,
		Iterations: c.rounds,
		Calibration: fmt.Sprintf("Gaussian std 2C√(L(L+1))·σ = %.4g (σ = %.4g, C = %g, L = %d) on α_B and v, q = %d/%d, T = %d rounds, %s",
			std, sigma, c.clip, c.batch, c.batch, n, c.rounds, samplingNote(a.Sampling)),
	}, nil
}
