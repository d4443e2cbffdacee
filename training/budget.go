package training

import (
	"context"
	"errors"
	"fmt"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// A trainer's run recorded in a budget store (package budget): the data set's spend
// across runs, processes and checkpoints. ReserveBudget records the trainer's remaining
// plan before its first step, BudgetRecord.Commit what it actually spent when it stops
// (RunBudgeted does both around Run), and the checkpoints the trainer writes in between
// record the ledger's head as a rollback witness.

// BudgetRun describes a trainer's run for its record in a budget store (ReserveBudget).
type BudgetRun struct {
	// Fingerprint keys the data set's ledger: datasets.ContentFingerprint of the data
	// the run is charged to, the training set as loaded (before a validation split takes
	// a part away from the trainer). "": the trainer's own content fingerprint, of
	// TrainerConfig.Data.Train (TrainerConfig.Data.ContentFingerprint, or computed now).
	Fingerprint string
	// Limit > 0 refuses (a *budget.OverBudgetError, budget.ErrOverBudget), before the
	// first step, a plan that would take the data set's ε past Limit: the composition of
	// every run recorded on it, at the smallest δ of its runs. 0: no limit (the run is
	// recorded all the same).
	Limit float64
	// Tool, Name and Command describe the run in the store's listing (privacy budget):
	// the program ("train"; "": "training"), the data as its user names it, the command
	// line.
	Tool, Name, Command string
	// Accountant is the accountant whose bound the reservation and the commit report
	// ("rdp": the RDP bound; "pld": the smaller of the RDP and PLD bounds), and that
	// reads the run's steps in the store. "": the accountant of the trainer's ledger
	// (Privacy.Accountant), none for a non-private run (budget.Run.Accountant "").
	Accountant string
}

// BudgetRecord is a trainer's run reserved in a budget store, settled by Commit.
type BudgetRecord struct {
	res     *budget.Reservation
	t       *Trainer
	acct    string
	base    int // the ledger's steps when the run reserved (the lineage before it)
	private bool
	settled *budget.Composition
}

// resumedFrom is what a reservation needs of the checkpoints Restore loaded: the last
// one's lineage (the run's parent in the store, whose ledger the trainer continues) and
// the ledger heads that they recorded (rollback witnesses): the last one's, and those of
// the ones restored before it, in the order restored.
type resumedFrom struct {
	parent     budget.Parent
	parentHead *budget.Head
	earlier    []budget.Head
}

// noteRestored records c, which Restore has just loaded, for ReserveBudget.
func (t *Trainer) noteRestored(c *checkpoint.Training) {
	r := &resumedFrom{parent: budget.Parent{Run: c.RunID, Step: c.Step, Steps: c.LineageSteps()}}
	if old := t.resumed; old != nil {
		r.earlier = old.earlier
		if old.parentHead != nil {
			r.earlier = append(r.earlier, *old.parentHead)
		}
	}
	if h := c.BudgetHead; h != nil {
		r.parentHead = &budget.Head{Fingerprint: h.Fingerprint, Ledger: h.Ledger, Seq: h.Seq, Hash: h.Hash}
	}
	t.resumed = r
}

// witnesses are the heads the restored checkpoints recorded: the parent's first.
func (r *resumedFrom) witnesses() []budget.Head {
	var w []budget.Head
	if r.parentHead != nil {
		w = append(w, *r.parentHead)
	}
	return append(w, r.earlier...)
}

// ReserveBudget records the trainer's planned spend on its data set in store before the
// first step: the steps from the trainer's position to the end of its plan, (q, z_t)
// step by step (segments), or an unbounded spend for a non-private run. Call it after
// Restore, which sets the trainer's position, and before Run; commit the record when Run
// returns, however it stopped (BudgetRecord.Commit; RunBudgeted does all three). A run
// whose process dies before the commit stays counted at its reservation, an upper bound.
//
// A trainer restored from checkpoints continues a lineage: the reservation names the
// last checkpoint restored as its parent; the steps of that checkpoint's ledger that the
// store does not hold for the lineage (a checkpoint from before the store, or from
// another store) are recorded first, as an import; and the ledger heads the restored
// checkpoints recorded are witnesses that the store must still hold (a rollback is
// refused, *budget.RollbackError). Errors from the store are returned as Store.Reserve
// returns them (budget.ErrOverBudget, budget.ErrTampered, …). From then on the trainer's
// checkpoints record the ledger's head after the run's latest entry
// (checkpoint.Training.BudgetHead). Only rank 0 of a data-parallel job records.
func ReserveBudget(store *budget.Store, t *Trainer, run BudgetRun) (*BudgetRecord, error) {
	if store == nil || t == nil {
		return nil, errors.New("training: ReserveBudget needs a budget store and a trainer")
	}
	if !t.leader() {
		return nil, errors.New("training: only rank 0 of a distributed job records its spend in a budget store: its ledger is the job's")
	}
	if t.budget != nil && t.budget.settled == nil {
		return nil, errors.New("training: the trainer's run is already reserved in a budget store: commit that reservation first")
	}
	p := t.plan
	acct := run.Accountant
	if acct == "" && t.ledger != nil {
		acct = t.ledger.Accountant().Name()
	}
	fp := run.Fingerprint
	if fp == "" {
		fp = t.fingerprint().Content
	}
	tool := run.Tool
	if tool == "" {
		tool = "training"
	}
	rec := &BudgetRecord{t: t, acct: acct, private: p.Private}
	br := budget.Run{Lineage: t.RunID(), Tool: tool, Name: run.Name, Command: run.Command, Delta: p.Delta, Accountant: acct}
	planned := budget.Spend{Unbounded: true}
	if p.Private {
		rec.base = t.ledger.Steps()
		l := accountant.NewLedger()
		for step := t.step; step < p.Steps; step++ {
			if err := l.Record(p.SampleRate, dpoptim.StepMultiplier(p.NoiseMultiplier, t.scaler, step), 1); err != nil {
				return nil, err
			}
		}
		planned = budget.SegmentSpend(acct, l.History())
	}
	switch r := t.resumed; {
	case r != nil:
		parent := r.parent
		br.Parent, br.Witnesses = &parent, r.witnesses()
	case t.step > 0 || (t.ledger != nil && t.ledger.Steps() > 0):
		// Steps taken before this reservation, by Run without one: the trainer's own
		// lineage is the parent, so that the store imports the steps it does not hold.
		br.Parent = &budget.Parent{Run: t.runID, Step: t.step, Steps: t.lineageSteps()}
	}
	if br.Parent != nil {
		inherited := budget.Spend{Unbounded: true}
		if p.Private {
			inherited = budget.SegmentSpend(acct, t.ledger.History())
		}
		br.Inherited = &inherited
	}
	res, err := store.Reserve(fp, br, planned, run.Limit)
	if err != nil {
		return nil, err
	}
	rec.res = res
	t.budget = rec
	return rec, nil
}

// Reservation is the run's reservation in the store: the data set's spend before the run
// and with its plan (Before, After), its fingerprint and id.
func (r *BudgetRecord) Reservation() *budget.Reservation { return r.res }

// Head is the data set's ledger head after the run's latest entry (its reservation, then
// its commit), as the trainer's checkpoints record it.
func (r *BudgetRecord) Head() *checkpoint.BudgetHead {
	h := r.res.Head()
	return &checkpoint.BudgetHead{Fingerprint: h.Fingerprint, Ledger: h.Ledger, Seq: h.Seq, Hash: h.Hash}
}

// Commit settles the reservation with what the trainer actually spent since it
// reserved: the steps its ledger recorded after the reservation, however Run stopped
// (finished, cancelled, failed: a step that failed after its noise was drawn is in the
// ledger and counts), or unbounded for a non-private run. It returns the data set's
// settled spend: every run recorded on it, this one included, at the data set's default
// δ. A commit that fails leaves the reservation, which over-counts; a database store
// that stays out of reach keeps the commit in a pending file (budget.UnrecordedError).
func (r *BudgetRecord) Commit() (budget.Composition, error) {
	actual := budget.Spend{Unbounded: true}
	if r.private && r.t.ledger != nil {
		actual = budget.SegmentSpend(r.acct, dropSteps(r.t.ledger.History(), r.base))
	}
	total, err := r.res.Commit(actual)
	if err != nil {
		return budget.Composition{}, err
	}
	r.settled = &total
	return total, nil
}

// Settled returns the data set's spend as Commit settled it (false before a successful
// Commit).
func (r *BudgetRecord) Settled() (budget.Composition, bool) {
	if r.settled == nil {
		return budget.Composition{}, false
	}
	return *r.settled, true
}

// RunBudgeted runs the trainer with its spend recorded in store: it reserves the
// remaining plan (ReserveBudget; nothing runs if the store refuses it), runs it (Run)
// and commits what was spent however Run stopped. It returns Run's result, the data
// set's settled spend and Run's error joined with the commit's (after a failed commit
// the store keeps the run's reservation, an upper bound).
func RunBudgeted(ctx context.Context, store *budget.Store, t *Trainer, run BudgetRun) (Result, budget.Composition, error) {
	rec, err := ReserveBudget(store, t, run)
	if err != nil {
		return Result{}, budget.Composition{}, err
	}
	res, runErr := t.Run(ctx)
	total, err := rec.Commit()
	if err != nil {
		err = fmt.Errorf("training: settling the run in the budget store %s (it keeps the run's planned spend): %w", store.Dir(), err)
	}
	return res, total, errors.Join(runErr, err)
}

// budgetHead is the head that the trainer's checkpoints record (nil: no reservation).
func (t *Trainer) budgetHead() *checkpoint.BudgetHead {
	if t.budget == nil || t.budget.res == nil {
		return nil
	}
	return t.budget.Head()
}

// dropSteps returns history without its first n steps.
func dropSteps(history []accountant.Segment, n int) []accountant.Segment {
	var out []accountant.Segment
	for _, s := range history {
		if n >= s.Steps {
			n -= s.Steps
			continue
		}
		s.Steps -= n
		n = 0
		out = append(out, s)
	}
	return out
}
