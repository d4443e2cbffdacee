package dpoptim

import (
	"slices"
)

// HeavyBall is Polyak's heavy-ball method in the form of the DP accelerated-methods paper
// (Kuru, Birbil, Gurbuzbalaban, Yildirim, eq. (9)):
//
//	x_{t+1} = x_t − α_t·g_t + β·(x_t − x_{t−1}),  x_{−1} = x_0.
//
// Wrapped in a [Private] step it is DP heavy ball with Gaussian noise (the paper adds
// Laplace noise for pure DP). With a constant rate it matches [SGD] with momentum μ = β.
//
// Build it as a literal, &HeavyBall{LearningRate: lr, Momentum: β}. Zero values:
// LearningRate is required (nil is rejected at the first Step); Momentum 0 is plain
// gradient descent, a legitimate value.
type HeavyBall struct {
	LearningRate Schedule
	Momentum     float64 // β in [0, 1)

	step  int
	delta []float64 // x_t − x_{t−1}
}

// Name returns "HeavyBall".
func (h *HeavyBall) Name() string { return "HeavyBall" }

// Step performs one heavy-ball update.
func (h *HeavyBall) Step(params, grad []float64) error {
	if err := checkLengths("HeavyBall", params, grad, len(h.delta)); err != nil {
		return err
	}
	if err := checkMomentum("heavy-ball momentum β", h.Momentum); err != nil {
		return err
	}
	alpha, err := rate(h.LearningRate, h.step)
	if err != nil {
		return err
	}
	if h.delta == nil {
		h.delta = make([]float64, len(params))
	}
	beta := h.Momentum
	delta := h.delta[:len(params)]
	grad = grad[:len(params)]
	for i := range params {
		// Products rounded, not fused (as descend).
		delta[i] = float64(beta*delta[i]) - float64(alpha*grad[i])
		params[i] += delta[i]
	}
	h.step++
	return nil
}

// State returns the step and the vector "delta", the last displacement x_t − x_{t−1}.
func (h *HeavyBall) State() State {
	return State{Step: h.step, Vectors: map[string][]float64{"delta": slices.Clone(h.delta)}}
}

// SetState restores a state returned by State.
func (h *HeavyBall) SetState(state State) error {
	delta, err := readOneVector("HeavyBall", state, "delta")
	if err != nil {
		return err
	}
	h.step, h.delta = state.Step, delta
	return nil
}
