package training

import "github.com/privtrain/privtrain/nn/checkpoint"

// The trainer's vocabulary. A Plan and its Sampling are what a checkpoint stores, so the
// types are defined in package checkpoint, which sits below training (a checkpoint's codec
// checks its ledger against its plan without a trainer); these aliases are the names a
// program that trains uses: training.Plan, Sampling: training.Shuffle. They are the same
// types as checkpoint's, not copies.
type (
	// Plan is a training run's schedule and privacy budget, fixed by NewTrainer before
	// the first step (Trainer.Plan): the ε the whole run will spend is known before it
	// starts. See checkpoint.Plan for its fields and stored form.
	Plan = checkpoint.Plan
	// Sampling says how the logical batches of a run are drawn from the training set:
	// Poisson (the default) or Shuffle.
	Sampling = checkpoint.Sampling
)

const (
	// Poisson includes every example in every step independently with probability
	// q = BatchSize/n: the sampling that the accountant's analysis assumes, and the
	// default.
	Poisson = checkpoint.Poisson
	// Shuffle visits a fresh random permutation of the training set in batches of
	// BatchSize examples. ε is still computed as for Poisson sampling, which shuffling
	// does not provide: use it for comparisons, not for reported privacy.
	Shuffle = checkpoint.Shuffle
)

// ParseSampling parses "poisson" or "shuffle".
func ParseSampling(s string) (Sampling, error) { return checkpoint.ParseSampling(s) }
