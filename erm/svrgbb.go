package erm

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// bbState computes DP-SVRG's Barzilai–Borwein step sizes (SVRG-BB, Tan, Ma,
// Dai and Qian 2016: η = ‖x̃_s − x̃_{s−1}‖² / (m⟨x̃_s − x̃_{s−1}, ∇F(x̃_s) −
// ∇F(x̃_{s−1})⟩)) without touching the data outside the accounted releases.
// SVRG-BB differences the exact full gradients at two snapshots; those are
// not released here (each inner step releases only v_t, noise included), and
// a step size computed from them would leak. So each epoch s contributes the
// mean point ȳ_s = (1/m) Σ_t x_{t−1} of its inner steps and the mean
// released direction ḡ_s = (1/m) Σ_t v_t + λ ȳ_s (the ridge part of r is
// smooth and public; the L1 part is left out). For a quadratic loss,
// E[v_t | x_{t−1}] = ∇F_loss(x_{t−1}) and the gradient is affine, so ḡ_s
// estimates ∇F(ȳ_s), with the noise averaged down by √m. The step size of
// epoch s+1 is bbStep(ȳ_s − ȳ_{s−1}, ḡ_s − ḡ_{s−1}, m), a post-processing of
// released quantities (no privacy cost), capped at max; epochs 1 and 2 use
// the given η.
type bbState struct {
	max                float64
	sumY, sumV         []float64 // this epoch's sums of x_{t−1} and v_t
	y, g, prevY, prevG []float64
	steps              int
	epochs             int
}

func newBBState(d int, max float64) *bbState {
	return &bbState{max: max, sumY: make([]float64, d), sumV: make([]float64, d),
		y: make([]float64, d), g: make([]float64, d), prevY: make([]float64, d), prevG: make([]float64, d)}
}

// observe adds one inner step's point x_{t−1} and released direction v_t.
func (b *bbState) observe(x, v []float64) {
	floats.Add(b.sumY, x)
	floats.Add(b.sumV, v)
	b.steps++
}

// next closes the epoch (of m inner steps) and returns the step size of the
// next one: the BB step once two epochs have been seen, else eta.
func (b *bbState) next(eta float64, m int, lambda float64) float64 {
	b.y, b.prevY = b.prevY, b.y
	b.g, b.prevG = b.prevG, b.g
	inv := 1 / float64(b.steps)
	floats.ScaleTo(b.y, inv, b.sumY)
	floats.ScaleTo(b.g, inv, b.sumV)
	floats.AddScaled(b.g, lambda, b.y)
	for j := range b.sumY {
		b.sumY[j], b.sumV[j] = 0, 0
	}
	b.steps = 0
	b.epochs++
	if b.epochs < 2 {
		return eta
	}
	dy := make([]float64, len(b.y))
	dg := make([]float64, len(b.g))
	floats.SubTo(dy, b.y, b.prevY)
	floats.SubTo(dg, b.g, b.prevG)
	if s, ok := bbStep(dy, dg, m); ok {
		return min(s, b.max)
	}
	return eta
}

// bbStep returns the SVRG-BB step ‖dy‖²/(m⟨dy, dg⟩), and false where it is
// not a finite positive number (no positive curvature seen along dy).
func bbStep(dy, dg []float64, m int) (float64, bool) {
	den := float64(m) * floats.Dot(dy, dg)
	s := floats.Dot(dy, dy) / den
	if !(den > 0) || !(s > 0) || math.IsInf(s, 1) {
		return 0, false
	}
	return s, true
}
