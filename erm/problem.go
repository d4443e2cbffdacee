package erm

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/erm/data"
)

// Problem is a regularised generalised linear model
//
//	F(w) = (1/n) Σ_i l(x_iᵀw, y_i) + (Lambda/2)‖w‖² + L1·‖w‖₁,  ‖w‖₂ ≤ Radius,
//
// over the examples of Data. Solvers read it and never modify it.
//
// Regularisation convention: Lambda multiplies ‖w‖²/2, as in the DP-SCD and
// DP-SVRG papers, so the strong-convexity constant is μ = Lambda. The DP
// accelerated methods paper writes λ‖x‖² (not λ/2, digest §2.7; hence its
// μ = 2λ): its λ = 0.01 is Lambda = 0.02 here.
type Problem struct {
	Data *data.Dataset
	Loss Loss
	// Lambda ≥ 0 is the ridge coefficient of (Lambda/2)‖w‖².
	Lambda float64
	// L1 ≥ 0 is the lasso coefficient; only the proximal solvers (DP-SVRG,
	// DP-SVRG++) and Optimum accept L1 > 0.
	L1 float64
	// Radius > 0 constrains ‖w‖₂ ≤ Radius; only DP-AccMD and Optimum accept
	// it. Zero means unconstrained.
	Radius float64
}

// Validate checks the data (see data.Dataset.Validate), the coefficients and,
// for a classification loss, that every label is ±1.
func (p *Problem) Validate() error {
	if p == nil || p.Loss == nil {
		return fmt.Errorf("erm: problem without a loss: %w", ErrInvalid)
	}
	if err := p.Data.Validate(); err != nil {
		return fmt.Errorf("erm: %w", err)
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"Lambda", p.Lambda}, {"L1", p.L1}, {"Radius", p.Radius}} {
		if !(c.v >= 0) || math.IsInf(c.v, 1) {
			return fmt.Errorf("erm: %s = %v: must be a finite number ≥ 0: %w", c.name, c.v, ErrInvalid)
		}
	}
	if p.Loss.Classification() {
		for i, y := range p.Data.Y {
			if y != 1 && y != -1 {
				return fmt.Errorf("erm: %s loss needs labels ±1, example %d has %v (see data.Dataset.BinaryLabels): %w", p.Loss.Name(), i, y, ErrInvalid)
			}
		}
	}
	return nil
}

// Len returns the number of examples n.
func (p *Problem) Len() int { return p.Data.Len() }

// Dim returns the number of features d.
func (p *Problem) Dim() int { return p.Data.Dim() }

// Value returns F(w), including the L1 term (the ball constraint is not
// checked).
func (p *Problem) Value(w []float64) float64 {
	n := p.Len()
	var s float64
	for i := range n {
		s += p.Loss.Value(floats.Dot(p.Data.X.RawRowView(i), w), p.Data.Y[i])
	}
	nrm := floats.Norm(w, 2)
	v := s/float64(n) + 0.5*p.Lambda*nrm*nrm
	if p.L1 > 0 {
		v += p.L1 * floats.Norm(w, 1)
	}
	return v
}

// gradientChunk is the number of rows whose loss gradients are summed into
// one partial sum. Partial sums are added in chunk order, so the result is
// bit-for-bit the same however many goroutines compute them.
const gradientChunk = 4096

// Gradient stores in grad the gradient of the smooth part of F,
// (1/n) Σ l'(x_iᵀw, y_i) x_i + Lambda·w (a subgradient for the hinge loss);
// the L1 term is left to the prox. Large problems are split over
// GOMAXPROCS goroutines with a deterministic summation order.
func (p *Problem) Gradient(grad, w []float64) {
	n, d := p.Len(), p.Dim()
	chunks := (n + gradientChunk - 1) / gradientChunk
	partial := make([]float64, chunks*d)
	work := func(c int) {
		acc := partial[c*d : (c+1)*d]
		for i := c * gradientChunk; i < min(n, (c+1)*gradientChunk); i++ {
			x := p.Data.X.RawRowView(i)
			var z float64
			for j, v := range x {
				z += v * w[j]
			}
			if g := p.Loss.Deriv(z, p.Data.Y[i]); g != 0 {
				for j, v := range x {
					acc[j] += g * v
				}
			}
		}
	}
	if workers := min(runtime.GOMAXPROCS(0), chunks); workers > 1 && n*d >= 1<<15 {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for c := int(next.Add(1)) - 1; c < chunks; c = int(next.Add(1)) - 1 {
					work(c)
				}
			})
		}
		wg.Wait()
	} else {
		for c := range chunks {
			work(c)
		}
	}
	for j := range grad {
		grad[j] = 0
	}
	for c := range chunks {
		floats.Add(grad, partial[c*d:(c+1)*d])
	}
	floats.Scale(1/float64(n), grad)
	floats.AddScaled(grad, p.Lambda, w)
}

// batchGradient stores in grad (1/|idx|) Σ_{i∈idx} l'(x_iᵀw) x_i + Lambda·w.
func (p *Problem) batchGradient(grad, w []float64, idx []int) {
	for j := range grad {
		grad[j] = 0
	}
	for _, i := range idx {
		x := p.Data.X.RawRowView(i)
		if g := p.Loss.Deriv(floats.Dot(x, w), p.Data.Y[i]); g != 0 {
			floats.AddScaled(grad, g, x)
		}
	}
	floats.Scale(1/float64(len(idx)), grad)
	floats.AddScaled(grad, p.Lambda, w)
}

// lossDeriv returns l'(x_iᵀw, y_i), the scalar of example i's loss gradient
// l'·x_i.
func (p *Problem) lossDeriv(i int, w []float64) float64 {
	return p.Loss.Deriv(floats.Dot(p.Data.X.RawRowView(i), w), p.Data.Y[i])
}

// StrongConvexity returns μ = Lambda.
func (p *Problem) StrongConvexity() float64 { return p.Lambda }

// Smoothness returns L = β·R² + Lambda, β the loss's smoothness and R the
// declared bound on ‖x_i‖₂: a bound on the smooth part's curvature that does
// not look at the data, so step sizes derived from it leak nothing. Without a
// declared bound R is the largest row norm of the data at hand (fine for
// non-private runs only).
func (p *Problem) Smoothness() float64 {
	r := p.Data.L2Bound
	if r == 0 {
		for i := range p.Len() {
			r = max(r, floats.Norm(p.Data.X.RawRowView(i), 2))
		}
	}
	return p.Loss.Smoothness()*r*r + p.Lambda
}

// SpectralSmoothness returns λ_max((1/n) XᵀX) + Lambda, the smoothness
// estimate of the DP accelerated methods paper (Sec. 5, which omits the
// logistic loss's factor β = 1/4, as this does). It reads the data, so a step
// size derived from it is not private.
func (p *Problem) SpectralSmoothness() float64 {
	n := p.Len()
	var g mat.SymDense
	g.SymOuterK(1/float64(n), p.Data.X.T())
	var eig mat.EigenSym
	if !eig.Factorize(&g, false) {
		return math.NaN()
	}
	vals := eig.Values(nil)
	return vals[len(vals)-1] + p.Lambda
}

// Lipschitz returns G = (loss Lipschitz constant)·(declared bound on ‖x_i‖₂),
// a bound on the L2 norm of every per-example loss gradient l'(x_iᵀw)x_i
// (the regulariser's gradient is the same for every example and cancels in
// sensitivities). It fails without a declared bound or for a loss that is not
// Lipschitz.
func (p *Problem) Lipschitz() (float64, error) {
	if p.Data.L2Bound <= 0 {
		return 0, fmt.Errorf("erm: the data declare no bound on ‖x_i‖₂ (normalize them): %w", ErrNoBound)
	}
	g := p.Loss.Lipschitz()
	if math.IsInf(g, 1) {
		return 0, fmt.Errorf("erm: the %s loss has no Lipschitz bound, which gradient perturbation needs: %w", p.Loss.Name(), ErrUnsupported)
	}
	return g * p.Data.L2Bound, nil
}

// L1Sensitivity returns S1 = 2·(loss Lipschitz constant)·(declared bound on
// ‖x_i‖₁), the L1 sensitivity of one example's gradient under replacement
// (eq. 36 of the DP accelerated methods paper: S1 = 2·20 = 40 for its data).
func (p *Problem) L1Sensitivity() (float64, error) {
	if p.Data.L1Bound <= 0 {
		return 0, fmt.Errorf("erm: the data declare no bound on ‖x_i‖₁ (normalize them): %w", ErrNoBound)
	}
	g := p.Loss.Lipschitz()
	if math.IsInf(g, 1) {
		return 0, fmt.Errorf("erm: the %s loss has no Lipschitz bound, which the Laplace calibration needs: %w", p.Loss.Name(), ErrUnsupported)
	}
	return 2 * g * p.Data.L1Bound, nil
}

// Accuracy returns the fraction of examples of ds with sign(x_iᵀw) = y_i
// (margin 0 counts as +1), for ±1 labels.
func Accuracy(ds *data.Dataset, w []float64) float64 {
	n := ds.Len()
	if n == 0 {
		return math.NaN()
	}
	correct := 0
	for i := range n {
		pred := 1.0
		if floats.Dot(ds.Row(i), w) < 0 {
			pred = -1
		}
		if pred == ds.Y[i] {
			correct++
		}
	}
	return float64(correct) / float64(n)
}

// MSE returns (1/n) Σ (x_iᵀw − y_i)².
func MSE(ds *data.Dataset, w []float64) float64 {
	n := ds.Len()
	if n == 0 {
		return math.NaN()
	}
	var s float64
	for i := range n {
		r := floats.Dot(ds.Row(i), w) - ds.Y[i]
		s += r * r
	}
	return s / float64(n)
}
