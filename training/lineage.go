package nn

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/dpoptim"
)

// ErrRewind reports a Restore that would move a trainer that has already taken steps back
// to an earlier state of its run (or to a state outside its run's lineage). The steps it
// would discard have spent privacy: their noisy results may already have been released
// (metrics, models, checkpoints), so they must stay counted. Restore with AllowRewind to
// rewind anyway; the ledger then keeps the discarded steps.
var ErrRewind = errors.New("nn: restore would rewind the run")

// Rewind records that a run at step From went back to an earlier state of its lineage at
// step To (a Restore with AllowRewind); To < From unless that state was on a branch that
// an earlier rewind left. The steps it discarded stay in the ledger: ε never decreases
// within a run's lineage.
type Rewind struct {
	From, To int
}

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
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand panics instead of returning an error)
	return hex.EncodeToString(b)
}

// RunID returns the run's identifier: random, created by NewTrainer, and taken over from
// the checkpoint by Restore, so that every checkpoint of one run and its resumes share it.
func (t *Trainer) RunID() string { return t.runID }

// LineageSteps returns the number of steps the run took to reach this checkpoint,
// counting the steps that rewinds discarded: the private ledger's step count.
func (c *Checkpoint) LineageSteps() int { return lineageSteps(c.Step, c.Rewinds) }

// lineageSteps is the number of steps taken to reach step after rewinds.
func lineageSteps(step int, rewinds []Rewind) int {
	n := step
	for _, r := range rewinds {
		n += r.From - r.To
	}
	return n
}

// lineageRanges returns the plan steps [start, end) that the run took, in the order it
// took them: the steps before the first rewind, after it up to the second, …, and the
// current branch up to step.
func lineageRanges(rewinds []Rewind, step int) [][2]int {
	var out [][2]int
	start := 0
	for _, r := range rewinds {
		out = append(out, [2]int{start, r.From})
		start = r.To
	}
	return append(out, [2]int{start, step})
}

// checkRewinds reports rewinds that cannot describe a run of steps steps now at step.
func checkRewinds(rewinds []Rewind, step, steps int) error {
	start := 0
	for i, r := range rewinds {
		if r.From < start || r.From > steps || r.To < 0 || r.To > steps || r.To == r.From {
			return fmt.Errorf("rewind %d from step %d to %d (branch started at step %d, plan of %d steps)", i+1, r.From, r.To, start, steps)
		}
		start = r.To
	}
	if step < start {
		return fmt.Errorf("step %d before the last rewind's step %d", step, start)
	}
	return nil
}

// verifyLedger checks that the ledger records exactly the steps the checkpoint's plan
// implies, in the order the lineage took them: sampling rate q and noise multiplier
// z·scale(t) at plan step t, where z is the plan's multiplier and scale the rule's noise
// schedule (nil: constant z). A ledger edited to claim more noise (or fewer steps) than
// the plan's is refused.
func verifyLedger(l *accountant.Ledger, p Plan, rewinds []Rewind, step int, scaler dpoptim.NoiseScaler) error {
	hist := l.History()
	seg, left := 0, 0
	if len(hist) > 0 {
		left = hist[0].Steps
	}
	for _, r := range lineageRanges(rewinds, step) {
		for t := r[0]; t < r[1]; t++ {
			for seg < len(hist) && left == 0 {
				if seg++; seg < len(hist) {
					left = hist[seg].Steps
				}
			}
			if seg == len(hist) {
				return fmt.Errorf("the ledger records %d steps, the run took more", l.Steps())
			}
			s := hist[seg]
			if want := stepMultiplier(p.NoiseMultiplier, scaler, t); s.Q != p.SampleRate || s.Z != want {
				return fmt.Errorf("the ledger records q = %v, z = %v at plan step %d; the plan (q = %v, noise multiplier %v%s) implies q = %v, z = %v: the ledger does not match the run",
					s.Q, s.Z, t+1, p.SampleRate, p.NoiseMultiplier, scheduleNote(scaler), p.SampleRate, want)
			}
			left--
		}
	}
	for seg < len(hist) && left == 0 {
		if seg++; seg < len(hist) {
			left = hist[seg].Steps
		}
	}
	if seg < len(hist) {
		return fmt.Errorf("the ledger records %d steps, more than the run took", l.Steps())
	}
	return nil
}

func scheduleNote(s dpoptim.NoiseScaler) string {
	if s == nil {
		return ""
	}
	return " scaled by the rule's noise schedule"
}

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
func follows(a []Rewind, aStep int, b []Rewind, bStep int) bool {
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
func (t *Trainer) lineageOf(c *Checkpoint) (rewind bool, err error) {
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
func (t *Trainer) lineageSteps() int { return lineageSteps(t.step, t.rewinds) }

func isRunID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}
