package erm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/privrand"
)

// SVRG is DP-SVRG, the private proximal SVRG of the DP-ERM-revisited paper
// (Algorithm 1; digest §4.2) for strongly convex F^r = F + r with
// r(x) = (Lambda/2)‖x‖² + L1‖x‖₁ handled by its prox. Each epoch computes
// the noiseless full gradient ṽ = ∇F(x̃) at the snapshot, then runs m inner
// steps
//
//	v_t = (1/b) Σ_{i∈B} (∇f_i(x_{t−1}) − ∇f_i(x̃)) + ṽ + u_t,  u_t ~ N(0, σ² I)
//	x_t = prox_{ηr}(x_{t−1} − η v_t)
//
// from x_0 = x̃ and sets x̃ to the average of the inner iterates. ṽ is never
// released on its own; its privacy is charged inside every inner step (see
// svrgNoise for the accounting of the sampled and full-gradient parts).
type SVRG struct {
	Epsilon, Delta float64
	// Epochs is the number of outer iterations T; 0 means Theorem 4.2's
	// ⌈log₂(n²ε²μ/(d G² log(1/δ)))⌉ (at least 1; A ≤ 1/2 per epoch), and is
	// required without noise.
	Epochs int
	// InnerSteps is m; 0 means the least m satisfying eq. (4) with A ≤ 1/2
	// at the step size used.
	InnerSteps int
	// BatchSize is b, the examples per inner step; 0 means 1 (the paper).
	BatchSize int
	// StepSize is η; 0 means 1/(40L), which meets eq. (4) (η < 1/(24L) is
	// needed for its second term to stay below 1/2). With BB it is the
	// step size of the first two epochs.
	StepSize float64
	// BB sets the step size of epoch s ≥ 3 by the Barzilai–Borwein rule of
	// SVRG-BB (Tan, Ma, Dai and Qian 2016; the paper's experiments):
	// η_s = ‖Δy‖²/(m⟨Δy, Δg⟩), from released quantities only (see bbStep),
	// capped at Theorem 4.2's 1/(12L); an estimate with ⟨Δy, Δg⟩ ≤ 0 keeps
	// the previous η. InnerSteps must then be set (eq. (4) depends on η).
	BB    bool
	Start []float64
	// Sampling is Poisson (the zero value: each example in an inner step's
	// batch with probability b/n, the sum divided by b), or One (exactly b
	// distinct examples drawn uniformly, the sum divided by b: Algorithm 1
	// for b = 1; Shuffled is the same). Both are charged the same ε, a
	// proven bound under add/remove adjacency (svrgNoise); One has no empty
	// steps and is what cmd/erm runs by default.
	Sampling Sampling
	// AccountantOptions configure the ledger; nil means orders up to 256.
	AccountantOptions []accountant.Option
	// PaperConstant, when > 0, draws σ from the paper's eq. (3) with c =
	// PaperConstant instead of the proven calibration: the run is NOT DP at
	// Epsilon (see papernoise.go; Result.Epsilon is then the proven ε).
	PaperConstant float64
}

// svrgConfig is what both SVRG variants derive from their settings.
type svrgConfig struct {
	n, d, batch int
	L, mu, G    float64
	eta         float64
}

func svrgSetup(p *Problem, method string, eps, delta float64, batch int, eta float64, start []float64) (svrgConfig, error) {
	G, err := gaussianSettings(p, eps, delta)
	if err != nil {
		return svrgConfig{}, err
	}
	if p.Radius != 0 {
		return svrgConfig{}, fmt.Errorf("erm: %s takes no constraint: %w", method, ErrUnsupported)
	}
	L, err := smoothLoss(p, method)
	if err != nil {
		return svrgConfig{}, err
	}
	c := svrgConfig{n: p.Len(), d: p.Dim(), batch: batch, L: L, mu: p.Lambda, G: G, eta: eta}
	if c.batch == 0 {
		c.batch = 1
	}
	if c.batch < 1 || c.batch > c.n {
		return svrgConfig{}, fmt.Errorf("erm: BatchSize = %d: must be in [1, n = %d]: %w", batch, c.n, ErrInvalid)
	}
	if !(c.eta >= 0) || math.IsInf(c.eta, 1) {
		return svrgConfig{}, fmt.Errorf("erm: StepSize = %v: must be a finite number > 0: %w", eta, ErrInvalid)
	}
	if start != nil && len(start) != c.d {
		return svrgConfig{}, fmt.Errorf("erm: Start has length %d, want %d: %w", len(start), c.d, ErrInvalid)
	}
	return c, nil
}

// svrgA returns the contraction factor A of eq. (4),
// 1/(η(1 − 8ηL)μm) + 8Lη(m+1)/(m(1 − 8Lη)).
func svrgA(eta, L, mu float64, m int) float64 {
	fm := float64(m)
	return 1/(eta*(1-8*eta*L)*mu*fm) + 8*L*eta*(fm+1)/(fm*(1-8*L*eta))
}

// Solve runs DP-SVRG and releases x̃_T.
func (a *SVRG) Solve(p *Problem, rng *rand.Rand) (*Result, error) {
	c, m, T, err := a.plan(p)
	if err != nil {
		return nil, err
	}
	var pc *PaperCalibration
	if a.PaperConstant > 0 { // eq. (3), as printed
		pc = newPaperCalibration("eq. (3)", a.PaperConstant, a.Epsilon, c.G, float64(T)*float64(m), math.Log(1/a.Delta), c.n)
	}
	sigma, achieved, split, err := svrgSigma(pc, a.Epsilon, a.Delta, T*m, c.n, c.batch, c.G, a.AccountantOptions)
	if err != nil {
		return nil, err
	}
	r := a.run(p, rng, c, m, T, sigma, split)
	note := fmt.Sprintf("Gaussian σ = %.4g per coordinate in each of T·m = %d·%d inner steps (RDP: sampled part q = %d/%d and full-gradient part, variance split %.3g), %s, %s",
		sigma, T, m, c.batch, c.n, split, a.stepNote(c.eta, r.etas), svrgSamplingNote(a.Sampling, c.batch))
	if pc != nil {
		note = paperNote(pc, achieved) + "; " + note
	}
	return &Result{X: r.snapshot, Epsilon: achieved, Delta: gaussianDelta(a.Epsilon, a.Delta), Iterations: T * m,
		Calibration: note, Paper: pc}, nil
}

// plan validates the settings and derives η (in c), m and T.
func (a *SVRG) plan(p *Problem) (c svrgConfig, m, T int, err error) {
	c, err = svrgSetup(p, "DP-SVRG", a.Epsilon, a.Delta, a.BatchSize, a.StepSize, a.Start)
	if err != nil {
		return c, 0, 0, err
	}
	if err := checkPaperConstant(a.PaperConstant, a.Epsilon); err != nil {
		return c, 0, 0, err
	}
	if !(c.mu > 0) {
		return c, 0, 0, fmt.Errorf("erm: DP-SVRG needs a strongly convex objective (Lambda > 0); use DP-SVRG++: %w", ErrInvalid)
	}
	if c.eta == 0 {
		c.eta = 1 / (40 * c.L)
	}
	m = a.InnerSteps
	if m == 0 && a.BB {
		return c, 0, 0, fmt.Errorf("erm: DP-SVRG with BB step sizes needs InnerSteps (eq. (4) depends on η): %w", ErrInvalid)
	}
	if m == 0 {
		if 8*c.eta*c.L >= 1.0/3 {
			return c, 0, 0, fmt.Errorf("erm: StepSize = %v is too large for eq. (4) (need η < 1/(24L)); set InnerSteps: %w", c.eta, ErrInvalid)
		}
		m = 1
		for svrgA(c.eta, c.L, c.mu, m) > 0.5 {
			m *= 2
		}
		lo := m / 2
		for lo+1 < m { // least m with A ≤ 1/2
			mid := (lo + m) / 2
			if svrgA(c.eta, c.L, c.mu, mid) <= 0.5 {
				m = mid
			} else {
				lo = mid
			}
		}
	}
	if m < 1 {
		return c, 0, 0, fmt.Errorf("erm: InnerSteps = %d: must be ≥ 1: %w", a.InnerSteps, ErrInvalid)
	}
	T = a.Epochs
	if T == 0 {
		if math.IsInf(a.Epsilon, 1) {
			return c, 0, 0, fmt.Errorf("erm: Epochs must be set when the noise is off: %w", ErrInvalid)
		}
		r := float64(c.n) * float64(c.n) * a.Epsilon * a.Epsilon * c.mu / (float64(c.d) * c.G * c.G * math.Log(1/a.Delta))
		T = max(1, int(math.Ceil(math.Log2(r))))
	}
	if T < 1 {
		return c, 0, 0, fmt.Errorf("erm: Epochs = %d: must be ≥ 1: %w", a.Epochs, ErrInvalid)
	}
	return c, m, T, nil
}

// iterate runs T epochs of m inner steps with noise std sigma.
func (a *SVRG) iterate(p *Problem, rng *rand.Rand, c svrgConfig, m, T int, sigma float64) []float64 {
	return a.run(p, rng, c, m, T, sigma, 0).snapshot
}

// run is iterate returning the runner, whose etas tests read.
// split is svrgNoise's variance fraction f of the sampled part (BB only).
func (a *SVRG) run(p *Problem, rng *rand.Rand, c svrgConfig, m, T int, sigma, split float64) *svrgRunner {
	r := newSVRGRunner(p, c, sigma, a.Sampling)
	if a.BB {
		r.bb = newBBState(c.d, 1/(12*c.L))
		r.split = split
	}
	if a.Start != nil {
		copy(r.snapshot, a.Start)
	}
	for range T {
		copy(r.x, r.snapshot) // Algorithm 1 restarts each epoch from x̃
		r.etas = append(r.etas, r.c.eta)
		r.epoch(rng, m)
		if r.bb != nil {
			r.c.eta = r.bb.next(r.c.eta, m, p.Lambda)
		}
	}
	return r
}

// stepNote describes the step size in the calibration line.
func (a *SVRG) stepNote(eta float64, etas []float64) string {
	if a.BB {
		return fmt.Sprintf("η = %.4g in epochs 1–2, then Barzilai–Borwein (SVRG-BB, from the released directions; last epoch's η = %.4g)", eta, etas[len(etas)-1])
	}
	return fmt.Sprintf("η = %.4g", eta)
}

// svrgSamplingNote says in the calibration line how inner batches were drawn.
func svrgSamplingNote(s Sampling, b int) string {
	if s == One || s == Shuffled {
		if b == 1 {
			return "exactly one example drawn uniformly per inner step"
		}
		return fmt.Sprintf("exactly %d distinct examples drawn uniformly per inner step", b)
	}
	return "Poisson sampling"
}

// svrgRunner holds the buffers of the SVRG inner loop.
type svrgRunner struct {
	p               *Problem
	c               svrgConfig
	sigma           float64
	snapshot        []float64 // x̃
	x, full, v, avg []float64
	snapDeriv       []float64 // l'(x_iᵀx̃) for every i, from the full-gradient pass
	sampling        Sampling
	smp             *sampler
	buf             []int
	bb              *bbState    // nil without BB step sizes
	split           float64     // with bb: the noise variance fraction f of the sampled part
	etas            []float64   // the step size of every epoch run so far
	onBatch         func([]int) // test hook: every inner step's batch
}

func newSVRGRunner(p *Problem, c svrgConfig, sigma float64, s Sampling) *svrgRunner {
	return &svrgRunner{
		p: p, c: c, sigma: sigma, sampling: s,
		snapshot: make([]float64, c.d), x: make([]float64, c.d), full: make([]float64, c.d),
		v: make([]float64, c.d), avg: make([]float64, c.d),
		snapDeriv: make([]float64, c.n), smp: newSampler(c.n),
	}
}

// epoch runs m inner steps from r.x (left at the last inner iterate) and
// sets the snapshot to their average.
func (r *svrgRunner) epoch(rng *rand.Rand, m int) {
	p := r.p
	// ṽ = (1/n) Σ l'(x_iᵀx̃) x_i, loss part only: the ridge term is in the prox.
	for j := range r.full {
		r.full[j] = 0
	}
	for i := range r.c.n {
		r.snapDeriv[i] = p.lossDeriv(i, r.snapshot)
		if g := r.snapDeriv[i]; g != 0 {
			floats.AddScaled(r.full, g, p.Data.X.RawRowView(i))
		}
	}
	floats.Scale(1/float64(r.c.n), r.full)
	for j := range r.avg {
		r.avg[j] = 0
	}
	eta := r.c.eta
	shrink := 1 / (1 + eta*p.Lambda)
	thresh := eta * p.L1
	inv := 1 / float64(r.c.batch) // the batch size, or its expectation under Poisson sampling
	q := float64(r.c.batch) / float64(r.c.n)
	if r.bb != nil {
		r.bb.begin(r.snapshot)
	}
	sampledStd := r.sigma
	if r.bb != nil { // the noise in two draws, N(0, (1−f)σ²) on ṽ and N(0, fσ²)
		sampledStd = math.Sqrt(r.split) * r.sigma
	}
	for range m {
		copy(r.v, r.full)
		if r.bb != nil {
			privrand.AddGaussian(rng, r.v, math.Sqrt(1-r.split)*r.sigma)
			r.bb.observe(r.v) // ṽ + u₂, a release svrgNoise charges
		}
		var batch []int
		if r.sampling == Shuffled || r.sampling == One {
			batch = r.smp.sample(rng, r.c.batch)
		} else {
			r.buf = poissonSample(rng, r.c.n, q, r.buf)
			batch = r.buf
		}
		for _, i := range batch {
			if g := p.lossDeriv(i, r.x) - r.snapDeriv[i]; g != 0 {
				floats.AddScaled(r.v, g*inv, p.Data.X.RawRowView(i))
			}
		}
		if r.onBatch != nil {
			r.onBatch(batch)
		}
		privrand.AddGaussian(rng, r.v, sampledStd)
		// prox of η((λ/2)‖·‖² + λ₁‖·‖₁): soft threshold, then shrink.
		for j, xj := range r.x {
			y := xj - eta*r.v[j]
			r.x[j] = math.Copysign(max(math.Abs(y)-thresh, 0), y) * shrink
		}
		floats.Add(r.avg, r.x)
	}
	floats.ScaleTo(r.snapshot, 1/float64(m), r.avg)
}
