package checkpoint

import (
	"fmt"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/dpoptim"
)

// Rewind records that a run at step From went back to an earlier state of its lineage at
// step To (a Restore with AllowRewind); To < From unless that state was on a branch that
// an earlier rewind left. The steps it discarded stay in the ledger: ε never decreases
// within a run's lineage.
type Rewind struct {
	From, To int
}

// LineageSteps returns the number of steps the run took to reach this checkpoint,
// counting the steps that rewinds discarded: the private ledger's step count.
func (c *Training) LineageSteps() int { return StepsTaken(c.Step, c.Rewinds) }

// StepsTaken is the number of steps taken to reach step after rewinds.
func StepsTaken(step int, rewinds []Rewind) int {
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

// CheckRewinds reports rewinds that cannot describe a run of steps steps now at step.
func CheckRewinds(rewinds []Rewind, step, steps int) error {
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

// VerifyLedger checks that the ledger records exactly the steps the checkpoint's plan
// implies, in the order the lineage took them: sampling rate q and noise multiplier
// z·scale(t) at plan step t, where z is the plan's multiplier and scale the rule's noise
// schedule (nil: constant z). A ledger edited to claim more noise (or fewer steps) than
// the plan's is refused.
func VerifyLedger(l *accountant.Ledger, p Plan, rewinds []Rewind, step int, scaler dpoptim.NoiseScaler) error {
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
			if want := dpoptim.StepMultiplier(p.NoiseMultiplier, scaler, t); s.Q != p.SampleRate || s.Z != want {
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

func IsRunID(s string) bool {
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
