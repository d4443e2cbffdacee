package erm

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// bbState computes DP-SVRG's Barzilai–Borwein step sizes (SVRG-BB, Tan, Ma,
// Dai and Qian 2016: η = ‖x̃_s − x̃_{s−1}‖² / (m⟨x̃_s − x̃_{s−1}, ∇F(x̃_s) −
// ∇F(x̃_{s−1})⟩)) from accounted releases only. SVRG-BB differences the
// exact full gradients at two snapshots, which are not released, and a step
// size computed from them would leak. svrgNoise charges every inner step as
// two releases, the sampled part with noise of variance fσ² and the full
// gradient ṽ = ∇F_loss(x̃) with noise u₂ of variance (1−f)σ²; with BB the
// inner step draws its noise as these two parts (the same N(0, σ²) in sum),
// and the mean of ṽ + u₂ over the epoch's m steps, plus λx̃, is a private
// estimate of ∇F(x̃) (noise std √((1−f)/m)·σ per coordinate: small, since
// the calibration puts most of the variance on the sampled part). Its
// snapshot x̃ is released too. The estimate for x̃_{s−1} is complete only
// after epoch s, so the step size of epoch s+1 is
// bbStep(x̃_{s−1} − x̃_{s−2}, ĝ_{s−1} − ĝ_{s−2}, m) (lagged by one epoch;
// the same on a quadratic), capped at max: a post-processing, no privacy
// cost. Epochs 1 and 2 use the given η. (The mean of the released v_t does
// not work: the noise in v_t moves x against itself, so ⟨Δx, Δv⟩ is
// negative.)
type bbState struct {
	max                float64
	sumG               []float64 // this epoch's sum of ṽ + u₂
	y, g, prevY, prevG []float64
	steps, epochs      int
}

func newBBState(d int, max float64) *bbState {
	return &bbState{max: max, sumG: make([]float64, d),
		y: make([]float64, d), g: make([]float64, d), prevY: make([]float64, d), prevG: make([]float64, d)}
}

// begin starts an epoch at snapshot x̃.
func (b *bbState) begin(snapshot []float64) {
	b.y, b.prevY = b.prevY, b.y
	b.g, b.prevG = b.prevG, b.g
	copy(b.y, snapshot)
	for j := range b.sumG {
		b.sumG[j] = 0
	}
	b.steps = 0
}

// observe adds one inner step's released full-gradient part ṽ + u₂.
func (b *bbState) observe(g []float64) {
	floats.Add(b.sumG, g)
	b.steps++
}

// next closes the epoch (of m inner steps) and returns the step size of the
// next one: the BB step once two epochs have been seen, else eta.
func (b *bbState) next(eta float64, m int, lambda float64) float64 {
	floats.ScaleTo(b.g, 1/float64(b.steps), b.sumG)
	floats.AddScaled(b.g, lambda, b.y)
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
