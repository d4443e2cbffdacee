package erm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/floats"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/privrand"
)

// SCDBaselineSGD is the DP-SGD baseline of the DP-SCD paper's experiments
// (Damaskinos et al., Sec. 5; digest §5.5; Abadi et al.'s DP-SGD on a GLM):
// each of T = Epochs·N/L rounds draws a batch (Poisson at q = L/N by default,
// what the accountant analyses), clips every example's loss gradient
// l'(x_iᵀθ, y_i)·x_i to norm C, sums them, adds N(0, σ²C²I), divides by the
// expected batch size L (fixed, so one example moves the average by at most
// C/L whatever the realised batch), adds the data-independent λθ and steps
// θ ← θ − η·g. σ is the noise multiplier of T subsampled Gaussian steps at
// q = L/N, calibrated by the RDP accountant to (ε, δ): the same calibration
// as SCD, whose two released vectors need √2 times this noise.
//
// The paper's authors' code divides by the lot size and adds λθ once per
// lot, as here; it does not say whether its DP-SGD draws Poisson batches.
type SCDBaselineSGD struct {
	// Epsilon > 0 (+Inf: no noise) and Delta ∈ (0,1) are the budget.
	Epsilon, Delta float64
	// Epochs is the number of passes; 0 means 10.
	Epochs int
	// BatchSize is L, the expected batch; 0 means 100.
	BatchSize int
	// Clip is C, the bound on each example's gradient norm; 0 means 1.
	// +Inf is allowed only without noise.
	Clip float64
	// Step is η > 0, the constant step size.
	Step float64
	// Sampling is Poisson (the default) or Shuffled.
	Sampling Sampling
	// AccountantOptions configure the calibration; nil means orders up to
	// 1024 with the accountant's default conversion.
	AccountantOptions []accountant.Option
	// Progress, if set, is called after each epoch with a copy of the iterate
	// θ (post-processing of the noisy steps; see SCD.Progress).
	Progress func(epoch int, x []float64)
}

// Solve runs the DP-SGD baseline from θ = 0 and releases the last iterate.
func (a *SCDBaselineSGD) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	if err := checkSCDProblem(p, a.Epsilon, a.Delta); err != nil {
		return nil, err
	}
	if !(a.Step > 0) || math.IsInf(a.Step, 1) {
		return nil, fmt.Errorf("erm: Step = %v: DP-SGD needs a finite step size > 0: %w", a.Step, ErrInvalid)
	}
	if p.Data.L2Bound <= 0 && !math.IsInf(a.Epsilon, 1) {
		// Clipping bounds the sensitivity whatever the norms; the check only
		// keeps the solvers' inputs alike (normalised data).
		return nil, fmt.Errorf("erm: DP-SGD baseline: normalize the data (no declared norm bound): %w", ErrNoBound)
	}
	n := p.Len()
	c, err := scdCounts(a.Epsilon, a.Epochs, a.BatchSize, a.Clip, n)
	if err != nil {
		return nil, err
	}
	q := float64(c.batch) / float64(n)
	sigma, achieved, err := scdNoise(q, c.rounds, a.Epsilon, a.Delta, a.AccountantOptions)
	if err != nil {
		return nil, err
	}
	theta := make([]float64, p.Dim())
	sum := make([]float64, p.Dim())
	draw := newBatchDrawer(a.Sampling, n, c.batch)
	std := sigma * c.clip
	scale := 1 / float64(c.batch)
	marks := newEpochMarks(c, a.Progress)
	for r := range c.rounds {
		batch := draw.next(rng)
		sgdSum(p, theta, batch, c.clip, sum)
		if std > 0 {
			privrand.AddGaussian(rng, sum, std)
		}
		// θ ← θ − η(sum/L + λθ)
		floats.Scale(1-a.Step*p.Lambda, theta)
		floats.AddScaled(theta, -a.Step*scale, sum)
		marks.done(r, func() []float64 { return slices.Clone(theta) })
	}
	return &Result{
		X:          theta,
		Epsilon:    achieved,
		Delta:      gaussianDelta(a.Epsilon, a.Delta),
		Iterations: c.rounds,
		Calibration: fmt.Sprintf("Gaussian std σ·C = %.4g (σ = %.4g, C = %g) on the sum of clipped gradients, divided by L = %d, η = %g, q = %d/%d, T = %d rounds, %s",
			std, sigma, c.clip, c.batch, a.Step, c.batch, n, c.rounds, samplingNote(a.Sampling)),
	}, nil
}

// sgdSum stores in sum Σ_{i∈batch} clip_C(l'(x_iᵀθ, y_i)·x_i), each example's
// loss gradient scaled to norm at most C.
func sgdSum(p *Problem, theta []float64, batch []int, clip float64, sum []float64) {
	for j := range sum {
		sum[j] = 0
	}
	for _, i := range batch {
		x := p.Data.X.RawRowView(i)
		g := p.Loss.Deriv(floats.Dot(x, theta), p.Data.Y[i])
		if g == 0 {
			continue
		}
		if nrm := math.Abs(g) * floats.Norm(x, 2); nrm > clip {
			g *= clip / nrm
		}
		floats.AddScaled(sum, g, x)
	}
}
