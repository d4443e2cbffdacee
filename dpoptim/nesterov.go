package dpoptim

import (
	"math"
	"slices"
)

// Nesterov is Nesterov's accelerated gradient in the form of the DP accelerated-methods
// paper (eq. (27)):
//
//	z_t = (1+β)·x_t − β·x_{t−1},  x_{t+1} = z_t − α_t·g(z_t),  x_{−1} = x_0,
//
// where the gradient is taken at the extrapolated point z_t. So that a network can compute
// that gradient as usual, the parameters hold z_t between steps and the rule keeps x_t in
// its state ("x"); at the end of training the parameters are z_T, which differs from x_T by
// β·(x_T − x_{T−1}). Wrapped in a [Private] step it is DP-NAG with Gaussian noise.
//
// Build it as a literal, &Nesterov{LearningRate: lr, Momentum: β}. Zero values:
// LearningRate is required (nil is rejected at the first Step); Momentum 0 is plain
// gradient descent, a legitimate value.
type Nesterov struct {
	LearningRate Schedule
	Momentum     float64 // β in [0, 1); see [NesterovMomentum]

	step int
	x    []float64 // x_t
}

// NesterovMomentum returns β = (1 − √(αμ))/(1 + √(αμ)), the momentum of Theorem 4.1 of the
// DP accelerated-methods paper for step size α ≤ 1/L on a μ-strongly convex, L-smooth
// objective.
func NesterovMomentum(alpha, mu float64) float64 {
	r := math.Sqrt(alpha * mu)
	return (1 - r) / (1 + r)
}

// Name returns "Nesterov".
func (n *Nesterov) Name() string { return "Nesterov" }

// Step performs one update; params holds z_t on entry and z_{t+1} on return.
func (n *Nesterov) Step(params, grad []float64) error {
	if err := checkLengths("Nesterov", params, grad, len(n.x)); err != nil {
		return err
	}
	if err := checkMomentum("Nesterov momentum β", n.Momentum); err != nil {
		return err
	}
	alpha, err := rate(n.LearningRate, n.step)
	if err != nil {
		return err
	}
	if n.x == nil {
		n.x = slices.Clone(params) // z_0 = x_0
	}
	beta := n.Momentum
	x := n.x[:len(params)]
	grad = grad[:len(params)]
	for i := range params {
		// Products rounded, not fused (as descend).
		next := params[i] - float64(alpha*grad[i])
		params[i] = next + float64(beta*(next-x[i]))
		x[i] = next
	}
	n.step++
	return nil
}

// State returns the step and the vector "x", the iterate x_t (the parameters hold z_t).
func (n *Nesterov) State() State {
	return State{Step: n.step, Vectors: map[string][]float64{"x": slices.Clone(n.x)}}
}

// SetState restores a state returned by State.
func (n *Nesterov) SetState(state State) error {
	x, err := readOneVector("Nesterov", state, "x")
	if err != nil {
		return err
	}
	n.step, n.x = state.Step, x
	return nil
}
