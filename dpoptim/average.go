package dpoptim

import (
	"fmt"
	"slices"
)

// EMA is an exponential moving average of the parameters, θ̄, updated after every step
// from the parameters the step produced. It reads nothing but those parameters, which a
// private step has already released, so it is post-processing and costs no privacy; the
// training itself goes on from the raw parameters θ.
//
// With θ̄₀ = θ₀ (the parameters before the first step, [EMA.Init]) and θ_t the
// parameters after step t = 1, 2, …:
//
//	β_t = min(β, (1 + (t−1)) / (10 + (t−1)))
//	θ̄_t = β_t·θ̄_{t−1} + (1 − β_t)·θ_t
//
// where β is Decay. The warm-up of the decay (β₁ = 1/10, β₂ = 2/11, …, reaching β after
// about 9/(1−β) steps) keeps the average from clinging to the random initial parameters
// for thousands of steps when β is close to 1. It is JAX Privacy's averaging.ema with
// use_warmup=True, t counted from 0 at the first update (the EMA of De et al. 2022,
// "Unlocking high-accuracy differentially private image classification through scale"),
// and the num_updates form of TensorFlow's tf.train.ExponentialMovingAverage.
//
// Zero values: Decay is required: 0 (the average would be the last iterate) and values
// outside (0, 1) are rejected with ErrConfig by Init and Update.
type EMA struct {
	Decay float64

	step int
	avg  []float64
}

// Name returns "EMA(β)".
func (e *EMA) Name() string { return fmt.Sprintf("EMA(%v)", e.Decay) }

func (e *EMA) check() error {
	if !(e.Decay > 0 && e.Decay < 1) {
		return fmt.Errorf("%w: EMA decay %v, want β in (0, 1)", ErrConfig, e.Decay)
	}
	return nil
}

// Weight returns β_t, the weight of the old average in update t = 1, 2, ….
func (e *EMA) Weight(t int) float64 {
	u := float64(max(t-1, 0))
	return min(e.Decay, (1+u)/(10+u))
}

// Init starts the average at params (θ̄₀ = θ₀) with no update taken. It returns an error
// for an invalid Decay or a non-finite parameter, and then leaves e unchanged.
func (e *EMA) Init(params []float64) error {
	if err := e.check(); err != nil {
		return err
	}
	if i := firstNonFinite(params); i >= 0 {
		return fmt.Errorf("%w: %s: initial parameter [%d] = %v", ErrNonFinite, e.Name(), i, params[i])
	}
	e.step, e.avg = 0, slices.Clone(params)
	return nil
}

// Started says whether Init (or SetState with an average) has given the average its start.
func (e *EMA) Started() bool { return e.avg != nil }

// Update folds params, the parameters after one more step, into the average. It returns
// an error, and leaves e unchanged, before Init, for an invalid Decay or a length that is
// not the average's.
func (e *EMA) Update(params []float64) error {
	if err := e.check(); err != nil {
		return err
	}
	if e.avg == nil {
		return fmt.Errorf("%w: %s: Update before Init", ErrConfig, e.Name())
	}
	if len(params) != len(e.avg) {
		return fmt.Errorf("%w: %s: average of %d parameters, got %d", ErrLength, e.Name(), len(e.avg), len(params))
	}
	e.step++
	b := e.Weight(e.step)
	avg := e.avg[:len(params)]
	for i, p := range params {
		avg[i] = b*avg[i] + (1-b)*p
	}
	return nil
}

// Steps returns the number of updates folded in since Init.
func (e *EMA) Steps() int { return e.step }

// Average copies the average into dst, which must have its length; before Init it
// returns an error.
func (e *EMA) Average(dst []float64) error {
	if e.avg == nil {
		return fmt.Errorf("%w: %s: no average before Init", ErrConfig, e.Name())
	}
	if len(dst) != len(e.avg) {
		return fmt.Errorf("%w: %s: average of %d parameters into %d", ErrLength, e.Name(), len(e.avg), len(dst))
	}
	copy(dst, e.avg)
	return nil
}

// State returns the number of updates, the vector "average" (empty before Init) and the
// scalar "decay" (β, so that a checkpoint says which average it holds).
func (e *EMA) State() State {
	return State{Step: e.step, Vectors: map[string][]float64{"average": slices.Clone(e.avg)},
		Scalars: map[string]float64{"decay": e.Decay}}
}

// SetState restores a state returned by State. Its decay must be e's (an average kept
// with another β is another average); a step > 0 needs an average.
func (e *EMA) SetState(s State) error {
	r := readRuleState(e.Name(), s, []string{"average"}, []string{"decay"})
	avg := r.vector("average")
	decay, ok := r.scalar("decay")
	switch {
	case r.err != nil:
		return r.err
	case !ok:
		return fmt.Errorf("%w: %s: state without its decay", ErrState, e.Name())
	case decay != e.Decay:
		return fmt.Errorf("%w: %s: state of an average with decay %v", ErrState, e.Name(), decay)
	case avg == nil && s.Step > 0:
		return fmt.Errorf("%w: %s: %d updates without an average", ErrState, e.Name(), s.Step)
	}
	e.step, e.avg = s.Step, avg
	return nil
}
