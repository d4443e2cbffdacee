package erm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/privrand"
)

// dualLoss is a loss whose conjugate DP-SCD and the reference dual solver
// can work with: the built-in Logistic, Squared and Hinge.
type dualLoss interface {
	Loss
	// negConjugate returns l*(−a) for label y (+Inf outside the domain).
	negConjugate(a, y float64) float64
	// dualStep returns the ζ minimising l*(−(a+ζ)) + m ζ + (s/2) ζ², the
	// subproblem (8) of the DP-SCD paper times N, with m = xᵀθ and
	// s = σ'‖x‖²/(λN); box and newtonSteps only matter for the logistic loss.
	dualStep(a, y, m, s, box float64, newtonSteps int) float64
}

// dualState holds DP-SCD's model: the dual vector α ∈ R^N and the shared
// vector v, which equals Xα without noise (X the d×N matrix whose columns
// are the examples; here the examples are rows).
type dualState struct {
	p      *Problem
	loss   dualLoss
	alpha  []float64
	v      []float64
	sqNorm []float64 // ‖x_i‖²
	lamN   float64   // λN
}

func newDualState(p *Problem) *dualState {
	n := p.Len()
	st := &dualState{
		p:      p,
		loss:   p.Loss.(dualLoss),
		alpha:  make([]float64, n),
		v:      make([]float64, p.Dim()),
		sqNorm: make([]float64, n),
		lamN:   p.Lambda * float64(n),
	}
	for i := range n {
		x := p.Data.X.RawRowView(i)
		st.sqNorm[i] = floats.Dot(x, x)
	}
	return st
}

// zeta returns the minimiser of subproblem (8) for example i at the current
// (α, v), with the quadratic term scaled by sigmaP (σ' = L for DP-SCD's
// independent mini-batch updates, 1 for sequential ones).
func (st *dualState) zeta(i int, sigmaP, box float64, newtonSteps int) float64 {
	x := st.p.Data.X.RawRowView(i)
	m := floats.Dot(x, st.v) / st.lamN // xᵀθ with θ = v/(λN)
	s := sigmaP * st.sqNorm[i] / st.lamN
	return st.loss.dualStep(st.alpha[i], st.p.Data.Y[i], m, s, box, newtonSteps)
}

// applyExact performs one exact, unclipped, noiseless coordinate step (SDCA).
func (st *dualState) applyExact(i int) {
	z := st.zeta(i, 1, 0, 0)
	st.alpha[i] += z
	floats.AddScaled(st.v, z, st.p.Data.X.RawRowView(i))
}

// resync recomputes v = Xα, removing rounding drift (noise-free runs only).
func (st *dualState) resync() {
	for j := range st.v {
		st.v[j] = 0
	}
	for i, a := range st.alpha {
		if a != 0 {
			floats.AddScaled(st.v, a, st.p.Data.X.RawRowView(i))
		}
	}
}

// theta returns the primal model v/(λN).
func (st *dualState) theta() []float64 {
	th := append([]float64(nil), st.v...)
	floats.Scale(1/st.lamN, th)
	return th
}

// gap returns P(θ(α)) and the duality gap P(θ(α)) + D(α) of eq. (4), with
// D(α) = (1/N) Σ l*(−α_i) + ‖Xα‖²/(2λN²) (eq. 3), computed from v = Xα.
func (st *dualState) gap() (primal, gap float64) {
	n := float64(len(st.alpha))
	var conj float64
	for i, a := range st.alpha {
		conj += st.loss.negConjugate(a, st.p.Data.Y[i])
	}
	vn := floats.Norm(st.v, 2)
	dual := conj/n + vn*vn/(2*st.lamN*n)
	primal = st.p.Value(st.theta())
	return primal, primal + dual
}

// SCD is DP-SCD, the differentially private dual stochastic coordinate
// descent of Damaskinos et al. (Algorithm 1; digest §5.2), for ridge,
// logistic and hinge losses with Lambda > 0 on data with ‖x_i‖ ≤ 1.
//
// Each of T = Epochs·N/L rounds draws a batch (by default Poisson
// sampling at q = L/N, what the accountant analyses; Sampling: Shuffled takes
// the next L examples of a per-epoch permutation as the authors' code does)
// and computes every coordinate step ζ_j independently from the same (α, v)
// by minimising subproblem (8) with σ' = L, the expected batch size (fixed,
// so that one example's presence changes no other step of its round), scales
// it to |ζ_j| ≤ C, and adds N(0, 2C²σ²) noise to each of the touched α_j and
// to each coordinate of v. One example changes [Δα; Δv] by at most √2·C
// (Lemma 1: |ζ| ≤ C and ‖x‖ ≤ 1, the example added or removed, whatever the
// realised batch), so σ is the noise multiplier of T subsampled Gaussian steps
// with q = L/N, calibrated by the RDP accountant to (ε, δ). The released
// model is θ = v/(λN), not Xα/(λN): v is the noisy released vector, while
// Xα would touch the data again without noise.
type SCD struct {
	// Epsilon > 0 (+Inf: no noise) and Delta ∈ (0,1) are the budget.
	Epsilon, Delta float64
	// Epochs is the number of passes; 0 means 10.
	Epochs int
	// BatchSize is L, the coordinates updated per round; 0 means 100.
	BatchSize int
	// Clip is C, the bound on each |ζ_j|; 0 means 1 (never binding for the
	// logistic and hinge losses away from noise, whose duals live in [0,1]).
	// +Inf is allowed only without noise.
	Clip float64
	// NewtonSteps is the number of Newton steps of the logistic update; 0
	// means exact minimisation, 1 is the authors' code.
	NewtonSteps int
	// Box keeps y_jα_j in [Box, 1−Box] for the logistic loss so its
	// conjugate stays finite; 0 means 1e-4, the authors' value.
	Box float64
	// Sampling is Poisson (the default) or Shuffled.
	Sampling Sampling
	// AccountantOptions configure the calibration; nil means orders up to
	// 1024 (small ε needs large orders, digest §5.6) with the accountant's
	// default conversion.
	AccountantOptions []accountant.Option
	// Progress, if set, is called after each epoch (e = 1 … Epochs, at the
	// round where e·N/L coordinate updates are done) with the model θ = v/(λN)
	// of the noisy state so far: post-processing of what the rounds release,
	// covered by the same ε (the paper's Fig. 2 plots the objective along a
	// run this way). x is the caller's to keep.
	Progress func(epoch int, x []float64)
}

// epochMarks calls progress after the rounds that end epochs 1 … epochs of a
// run of rounds rounds (epoch e ends after ⌈e·rounds/epochs⌉ rounds).
type epochMarks struct {
	epochs, rounds, next int
	progress             func(epoch int, x []float64)
}

func newEpochMarks(c scdConfig, progress func(int, []float64)) *epochMarks {
	return &epochMarks{epochs: c.epochs, rounds: c.rounds, next: 1, progress: progress}
}

// done reports that round r (from 0) is over; model is called only when an
// epoch ended.
func (m *epochMarks) done(r int, model func() []float64) {
	if m.progress == nil {
		return
	}
	for m.next <= m.epochs && (r+1)*m.epochs >= m.next*m.rounds {
		m.progress(m.next, model())
		m.next++
	}
}

// scdConfig holds the validated settings shared by the DP-SCD variants.
type scdConfig struct {
	epochs, batch, rounds int
	clip                  float64
}

// checkSCD validates what the dual variants (SCD, SequentialSCD) need; units
// is the number of coordinates (N for the dual).
func checkSCD(p *Problem, eps, delta float64, epochs, batch int, clip float64, units int) (scdConfig, error) {
	if err := checkSCDProblem(p, eps, delta); err != nil {
		return scdConfig{}, err
	}
	if p.Data.L2Bound <= 0 && !math.IsInf(eps, 1) {
		return scdConfig{}, fmt.Errorf("erm: DP-SCD's sensitivity needs ‖x_i‖ ≤ 1 (normalize the data): %w", ErrNoBound)
	}
	if p.Data.L2Bound > 1+1e-12 {
		return scdConfig{}, fmt.Errorf("erm: DP-SCD needs examples of norm ≤ 1, the data declare %v (normalize them): %w", p.Data.L2Bound, ErrInvalid)
	}
	return scdCounts(eps, epochs, batch, clip, units)
}

// checkSCDProblem validates the problem and budget shared by all variants.
func checkSCDProblem(p *Problem, eps, delta float64) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if _, ok := p.Loss.(dualLoss); !ok {
		return fmt.Errorf("erm: DP-SCD has coordinate steps for the logistic, squared and hinge losses only, not %s: %w", p.Loss.Name(), ErrUnsupported)
	}
	if p.L1 != 0 || p.Radius != 0 {
		return fmt.Errorf("erm: DP-SCD takes neither an L1 term nor a constraint: %w", ErrUnsupported)
	}
	if !(p.Lambda > 0) {
		return fmt.Errorf("erm: DP-SCD needs Lambda > 0: %w", ErrInvalid)
	}
	if !(eps > 0) {
		return fmt.Errorf("erm: ε = %v: must be > 0 (+Inf for no noise): %w", eps, ErrInvalid)
	}
	if !math.IsInf(eps, 1) && !(delta > 0 && delta < 1) {
		return fmt.Errorf("erm: δ = %v: must be in (0, 1): %w", delta, ErrInvalid)
	}
	return nil
}

// scdCounts applies the defaults and derives T = epochs·units/L rounds (the
// authors' code runs epochs·N coordinate updates in rounds of L).
func scdCounts(eps float64, epochs, batch int, clip float64, units int) (scdConfig, error) {
	c := scdConfig{epochs: epochs, batch: batch, clip: clip}
	if c.epochs == 0 {
		c.epochs = 10
	}
	if c.batch == 0 {
		c.batch = min(100, units)
	}
	if c.clip == 0 {
		c.clip = 1
	}
	if c.epochs < 1 {
		return scdConfig{}, fmt.Errorf("erm: Epochs = %d: must be ≥ 1: %w", epochs, ErrInvalid)
	}
	if c.batch < 1 || c.batch > units {
		return scdConfig{}, fmt.Errorf("erm: BatchSize = %d: must be in [1, %d]: %w", batch, units, ErrInvalid)
	}
	if !(c.clip > 0) || (math.IsInf(c.clip, 1) && !math.IsInf(eps, 1)) {
		return scdConfig{}, fmt.Errorf("erm: Clip = %v: must be a finite number > 0 (+Inf only without noise): %w", clip, ErrInvalid)
	}
	c.rounds = max(1, c.epochs*units/c.batch)
	return c, nil
}

// scdNoise calibrates the noise multiplier of rounds subsampled Gaussian
// steps at rate q, returning 0 for ε = +Inf.
func scdNoise(q float64, rounds int, eps, delta float64, opts []accountant.Option) (sigma, achieved float64, err error) {
	if math.IsInf(eps, 1) {
		return 0, math.Inf(1), nil
	}
	if opts == nil {
		opts = []accountant.Option{accountant.WithOrders(accountant.OrdersUpTo(1024))}
	}
	sigma, achieved, err = accountant.CalibrateNoise(q, rounds, eps, delta, opts...)
	if err != nil {
		return 0, 0, fmt.Errorf("erm: calibrating DP-SCD noise: %w", err)
	}
	return sigma, achieved, nil
}

// batcher yields consecutive chunks of a per-epoch random permutation of
// [0, n), reshuffling when fewer than size indices remain.
type batcher struct {
	perm []int
	pos  int
}

func newBatcher(n int) *batcher {
	b := &batcher{perm: make([]int, n)}
	for i := range b.perm {
		b.perm[i] = i
	}
	b.pos = n
	return b
}

func (b *batcher) next(rng *rand.Rand, size int) []int {
	if b.pos+size > len(b.perm) {
		rng.Shuffle(len(b.perm), func(i, j int) { b.perm[i], b.perm[j] = b.perm[j], b.perm[i] })
		b.pos = 0
	}
	out := b.perm[b.pos : b.pos+size]
	b.pos += size
	return out
}

// clipStep scales ζ to |ζ| ≤ C (Algorithm 1, step 8).
func clipStep(z, c float64) float64 { return z / max(1, math.Abs(z)/c) }

// scdRound performs one round of Algorithm 1 on batch: independent
// subproblem steps from the same (α, v), clipped, then noise of standard
// deviation std on the touched α_j and on every coordinate of v. dv is
// scratch of length d.
func (st *dualState) scdRound(rng *rand.Rand, batch []int, sigmaP, clip, std, box float64, newtonSteps int, zetas, dv []float64) {
	for j := range dv {
		dv[j] = 0
	}
	for k, i := range batch {
		z := clipStep(st.zeta(i, sigmaP, box, newtonSteps), clip)
		zetas[k] = z
		floats.AddScaled(dv, z, st.p.Data.X.RawRowView(i))
	}
	for k, i := range batch {
		st.alpha[i] += zetas[k]
	}
	floats.Add(st.v, dv)
	if std > 0 {
		privrand.AddGaussianAt(rng, st.alpha, batch, std)
		privrand.AddGaussian(rng, st.v, std)
	}
}

// Solve runs DP-SCD and releases θ = v/(λN).
func (a *SCD) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	st, res, err := a.run(p, rng)
	if err != nil {
		return nil, err
	}
	res.X = st.theta()
	return res, nil
}

// run is Solve without the release, returning the final state for tests.
func (a *SCD) run(p *Problem, rng *rand.Rand) (*dualState, *Result, error) {
	n := p.Len()
	c, err := checkSCD(p, a.Epsilon, a.Delta, a.Epochs, a.BatchSize, a.Clip, n)
	if err != nil {
		return nil, nil, err
	}
	q := float64(c.batch) / float64(n)
	sigma, achieved, err := scdNoise(q, c.rounds, a.Epsilon, a.Delta, a.AccountantOptions)
	if err != nil {
		return nil, nil, err
	}
	st := a.iterate(p, rng, c, sigma)
	return st, &Result{
		Epsilon:     achieved,
		Delta:       gaussianDelta(a.Epsilon, a.Delta),
		Iterations:  c.rounds,
		Calibration: fmt.Sprintf("Gaussian std √2·C·σ = %.4g (σ = %.4g, C = %g) on α_B and v, q = L/N = %d/%d, T = %d rounds, %s", math.Sqrt2*c.clip*sigma, sigma, c.clip, c.batch, n, c.rounds, samplingNote(a.Sampling)),
	}, nil
}

// iterate runs the rounds of Algorithm 1 with noise multiplier sigma.
func (a *SCD) iterate(p *Problem, rng *rand.Rand, c scdConfig, sigma float64) *dualState {
	box := a.Box
	if box == 0 {
		box = 1e-4
	}
	std := math.Sqrt2 * c.clip * sigma // sensitivity √2·C (Lemma 1)
	st := newDualState(p)
	draw := newBatchDrawer(a.Sampling, p.Len(), c.batch)
	var zetas []float64
	dv := make([]float64, p.Dim())
	marks := newEpochMarks(c, a.Progress)
	for r := range c.rounds {
		batch := draw.next(rng)
		if cap(zetas) < len(batch) {
			zetas = make([]float64, 2*len(batch))
		}
		st.scdRound(rng, batch, scdSigmaPrime(c, batch), c.clip, std, box, a.NewtonSteps, zetas[:len(batch)], dv)
		marks.done(r, st.theta)
	}
	return st
}

// scdSigmaPrime is σ' of subproblem (8) for a round on batch: the expected
// batch L = qN, as dpoptim normalises by, never the realised size. With the
// realised size, adding one example to the batch would change σ' and so every
// other step of the round, and Lemma 1's √2·C would not bound the change
// (issue 23 item 8 measured 2.1·C). With σ' fixed each step depends on its
// own example and the shared (α, v) only. A realised batch above L may make
// the independent steps overshoot a little together; that costs progress,
// not privacy.
func scdSigmaPrime(c scdConfig, _ []int) float64 {
	return float64(c.batch)
}

// batchDrawer yields the batches of the DP-SCD variants.
type batchDrawer struct {
	sampling Sampling
	n, size  int
	shuffled *batcher
	buf      []int
}

func newBatchDrawer(s Sampling, n, size int) *batchDrawer {
	d := &batchDrawer{sampling: s, n: n, size: size}
	if s == Shuffled {
		d.shuffled = newBatcher(n)
	}
	return d
}

// next returns the next batch, valid until the following call.
func (d *batchDrawer) next(rng *rand.Rand) []int {
	if d.shuffled != nil {
		return d.shuffled.next(rng, d.size)
	}
	d.buf = poissonSample(rng, d.n, float64(d.size)/float64(d.n), d.buf)
	return d.buf
}

// samplingNote says in the calibration line how batches were drawn.
func samplingNote(s Sampling) string {
	if s == Shuffled {
		return "shuffled fixed-size batches (ε computed as for Poisson sampling)"
	}
	return "Poisson sampling"
}
