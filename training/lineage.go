package training

import (
	"errors"
	"fmt"
	"slices"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// ErrRewind reports a Restore that would move a trainer that has already taken steps back
// to an earlier state of its run (or to a state outside its run's lineage). The steps it
// would discard have spent privacy: their noisy results may already have been released
// (metrics, models, checkpoints), so they must stay counted. Restore with AllowRewind to
// rewind anyway; the ledger then keeps the discarded steps.
var ErrRewind = errors.New("training: restore would rewind the run")

// RestoreOption configures Trainer.Restore.
type RestoreOption func(*restoreConfig)

type restoreConfig struct{ allowRewind bool }

// AllowRewind lets Restore move a trainer that has taken steps back to an earlier
// checkpoint of its own run. The trainer's ledger keeps every step it took, the discarded
// ones included, so the run's ε does not decrease; the rewind is recorded in later
// checkpoints (Checkpoint.Rewinds). The budget check applies to the whole lineage: a
// calibrated plan usually needs a larger target ε to finish after a rewind.
func AllowRewind() RestoreOption { return func(c *restoreConfig) { c.allowRewind = true } }

// newRunID returns a random run identifier (128 bits, hex).
func newRunID() string {
	return privrand.ID(16)
}

// RunID returns the run's identifier: random, created by NewTrainer, and taken over from
// the checkpoint by Restore, so that every checkpoint of one run and its resumes share it.
func (t *Trainer) RunID() string { return t.runID }

// ledgerPrefix reports whether the steps of a are the first steps of b, in order.
func ledgerPrefix(a, b *accountant.Ledger) bool {
	ha, hb := a.History(), b.History()
	j, used := 0, 0 // steps of hb[j] consumed
	for _, s := range ha {
		for n := s.Steps; n > 0; {
			if j == len(hb) || hb[j].Q != s.Q || hb[j].Z != s.Z {
				return false
			}
			k := min(n, hb[j].Steps-used)
			n, used = n-k, used+k
			if used == hb[j].Steps {
				j, used = j+1, 0
			}
		}
	}
	return true
}

// follows reports whether the lineage (rewinds b, at step bStep) continues the lineage
// (rewinds a, at step aStep): b went through a's state.
func follows(a []checkpoint.Rewind, aStep int, b []checkpoint.Rewind, bStep int) bool {
	if len(b) < len(a) || !slices.Equal(a, b[:len(a)]) {
		return false
	}
	if len(b) == len(a) {
		return bStep >= aStep
	}
	return b[len(a)].From >= aStep
}

// lineageOf checks where c stands in the lineage of a trainer that has taken steps. It
// returns rewind = true when c is an earlier state of the trainer's run (restoring it
// discards steps), false when c is the trainer's state or a later one; an error wrapping
// ErrRewind when c is not in the trainer's lineage at all.
func (t *Trainer) lineageOf(c *checkpoint.Training) (rewind bool, err error) {
	if c.RunID != t.runID {
		return false, fmt.Errorf("%w: the trainer has taken %d steps of run %s; the checkpoint is of run %q: restore it into a new trainer", ErrRewind, t.step, t.runID, c.RunID)
	}
	ahead := follows(t.rewinds, t.step, c.Rewinds, c.Step) && (t.ledger == nil || ledgerPrefix(t.ledger, c.Ledger))
	if ahead {
		return false, nil
	}
	behind := follows(c.Rewinds, c.Step, t.rewinds, t.step) && (t.ledger == nil || ledgerPrefix(c.Ledger, t.ledger))
	if !behind {
		return false, fmt.Errorf("%w: the checkpoint (step %d, %d rewinds) is neither an earlier nor a later state of this trainer (step %d, %d rewinds): restore it into a new trainer", ErrRewind, c.Step, len(c.Rewinds), t.step, len(t.rewinds))
	}
	return true, nil
}

// lineageSteps is the number of steps the trainer's lineage took.
func (t *Trainer) lineageSteps() int { return checkpoint.StepsTaken(t.step, t.rewinds) }
