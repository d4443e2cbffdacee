package tuning

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// Trainers returns a Runner that trains each trial with the trainer that newTrainer
// builds for it and scores it with TrainTrial on validation examples. newTrainer must
// give the trainer the validation part as its test set (TrainerConfig.Data.Test), the
// trained-on part of the Accounting's size as its training set, a plan among the
// Accounting's Plans, and, when the trial is Seeded, its Seed.
func Trainers(newTrainer func(Trial) (*training.Trainer, error), validation int) Runner {
	return func(ctx context.Context, t Trial) (Outcome, error) {
		tr, err := newTrainer(t)
		if err != nil {
			return Outcome{}, err
		}
		return TrainTrial(ctx, tr, validation)
	}
}

// TrainTrial runs t and returns its outcome: the count of correct predictions on its
// test set of validation examples after the last epoch (rounded from the accuracy; −Inf
// if the parameters diverged or no evaluation ran), its ledger, its ε and the trainer.
func TrainTrial(ctx context.Context, t *training.Trainer, validation int) (Outcome, error) {
	if t == nil || validation < 1 {
		return Outcome{}, fmt.Errorf("tuning: a trial needs a trainer and a validation part of ≥ 1 examples as its test set (%d given)", validation)
	}
	res, err := t.Run(ctx)
	out := Outcome{Ledger: t.Ledger(), Trainer: t}
	switch {
	case err != nil && errors.Is(err, nn.ErrParams):
		// Diverged: a function of the noisy training alone, so scoring it −∞ keeps the
		// score private.
		out.Correct = math.Inf(-1)
	case err != nil:
		return Outcome{}, err
	case math.IsNaN(res.TestAccuracy):
		out.Correct = math.Inf(-1)
	default:
		out.Correct = math.Round(res.TestAccuracy * float64(validation))
	}
	if spent, err := t.Spent(); err == nil {
		out.Epsilon = spent.Epsilon
	}
	return out, nil
}

// EmptyPartError is Split's refusal of a fraction that leaves one part empty.
type EmptyPartError struct {
	Fraction              float64
	Examples, Train, Held int
}

func (e *EmptyPartError) Error() string {
	return fmt.Sprintf("tuning: validation fraction %g: of %d examples, %d fall in the validation part and %d in the trained-on part; both must be ≥ 1", e.Fraction, e.Examples, e.Held, e.Train)
}

// Split holds out about fraction of ds for validation, each example by its own content
// (datasets.HashSplit with datasets.DomainValidation, the split cmd/train -validation
// makes too): adding or removing one example moves no other, so neighbouring data sets
// give trained-on and validation parts that differ in that one example at most, which
// the search's privacy needs. The number held out is binomial rather than exact, and
// identical examples go to the same part. A split with an empty part is refused with an
// *EmptyPartError.
func Split(ds datasets.Dataset, fraction float64, seed uint64) (train, validation datasets.Dataset, err error) {
	trainIdx, valIdx, err := datasets.HashSplit(ds, fraction, seed, datasets.DomainValidation)
	if err != nil {
		return nil, nil, err
	}
	if len(valIdx) == 0 || len(trainIdx) == 0 {
		return nil, nil, &EmptyPartError{Fraction: fraction, Examples: ds.Len(), Train: len(trainIdx), Held: len(valIdx)}
	}
	if train, err = datasets.Subset(ds, trainIdx); err != nil {
		return nil, nil, err
	}
	if validation, err = datasets.Subset(ds, valIdx); err != nil {
		return nil, nil, err
	}
	return train, validation, nil
}
