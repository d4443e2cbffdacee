package dpoptim

import "github.com/privtrain/privtrain/accountant"

// Rule is a first-order update rule: the base optimizer that a [Private] step feeds with
// noisy gradient estimates (DP-X for rule X) and that [NonPrivate] feeds with plain mean
// gradients.
//
// A Rule sees only the gradient estimate it is handed; it never reads per-example or
// un-noised gradients, so under a Private step everything it does is post-processing.
type Rule interface {
	// Name returns the rule's short name ("SGD", "Adam", …).
	Name() string

	// Step updates params in place from grad, the gradient estimate at params for this
	// step, and advances the rule's step counter. Both slices have the model's parameter
	// count d, fixed by the first call; the rule must not keep either slice. On error
	// params are unchanged.
	Step(params, grad []float64) error

	// State returns a copy of the rule's state for a checkpoint: its step count, its
	// vectors under their names (empty before the first Step) and its scalars (absent
	// before they are set). It shares nothing with the rule.
	State() State

	// SetState replaces the rule's state by one returned by State of the same kind of
	// rule. It returns an error wrapping ErrState, and leaves the rule unchanged, if a
	// vector is missing or unknown, the step is negative or a value is malformed.
	SetState(state State) error
}

// Recorder receives the privacy cost of every private step: sampling rate q, noise
// multiplier z (noise standard deviation over the L2 sensitivity) and the number of steps.
// *accountant.Ledger satisfies it.
type Recorder interface {
	Record(q, z float64, steps int) error
}

// Smoother post-processes the noisy gradient estimate in place before the rule sees it;
// *smoothing.Laplacian[float64] (DP-LSSGD, DP-LSAdam) satisfies it. It must return an
// error, not panic, for a vector of the wrong length.
type Smoother interface {
	Smooth(v []float64) error
}

// Schedule gives the learning rate of step t = 0, 1, 2, …. Rules return an error for a
// rate that is negative, NaN or infinite.
type Schedule interface {
	Rate(step int) float64
}

// NoiseScaler is implemented by rules whose noise is matched to their step size (ADP-SGD):
// a Private step wrapping such a rule uses the noise multiplier z·NoiseScale(t) at step t
// (t = 0, 1, …) instead of z. NoiseScale must be a fixed positive function of t, known
// before training, so that the whole schedule can be calibrated ([CalibrateSchedule]).
type NoiseScaler interface {
	NoiseScale(step int) float64
}

// Optimizer is what a training loop drives once per logical batch: [*Private] for private
// training, [*NonPrivate] for baselines.
type Optimizer interface {
	Name() string
	// Step updates params from gradSum, the sum of the (clipped, for private training)
	// per-example gradients of a logical batch of batchSize examples.
	Step(params, gradSum []float64, batchSize int) error
	// State and SetState are as for [Rule]: a [*Private] step's State holds its own step
	// count (the steps its ledger records), its noise generator and the rule's State.
	State() State
	SetState(state State) error
}

// Compile-time checks that every implementation satisfies its interfaces.
var (
	_ Rule        = (*SGD)(nil)
	_ Rule        = (*Adam)(nil)
	_ Rule        = (*HeavyBall)(nil)
	_ Rule        = (*Nesterov)(nil)
	_ Rule        = (*ADPPolynomial)(nil)
	_ Rule        = (*ADPAdaGradNorm)(nil)
	_ Rule        = (*ADPSqrtDecay)(nil)
	_ NoiseScaler = (*ADPPolynomial)(nil)
	_ NoiseScaler = (*ADPAdaGradNorm)(nil)
	_ NoiseScaler = (*ADPSqrtDecay)(nil)
	_ Optimizer   = (*Private)(nil)
	_ Optimizer   = (*NonPrivate)(nil)
	_ Schedule    = Constant(0)
	_ Schedule    = StepDecay{}
	_ Schedule    = InverseTime{}
	_ Schedule    = InverseSqrt{}
	_ Schedule    = Cosine{}
	_ Schedule    = Warmup{}
	_ Schedule    = (*ADPPolynomial)(nil)
	_ Recorder    = (*accountant.Ledger)(nil)
)
