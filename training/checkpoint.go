package training

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/privtrain/privtrain/internal/faults"
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// Checkpoint capture and restore: Trainer.Checkpoint copies a trainer's state into a
// Checkpoint, Trainer.Restore checks a Checkpoint against the trainer's run and loads it.
// The file layout is checkpoint_codec.go's; Save and Load (save.go) join the two.

var (
	// ErrMismatch reports a checkpoint that belongs to another run than the trainer's:
	// another model, data set, optimizer, sampling, clipping, δ, noise or settings.
	ErrMismatch = errors.New("training: checkpoint does not match this training run")
)

// Checkpoint captures the trainer's state: call it between steps (after Run returns, or
// from a callback). The checkpoint shares nothing with the trainer.
func (t *Trainer) Checkpoint() (*checkpoint.Training, error) {
	if t.failed != nil {
		return nil, fmt.Errorf("training: no checkpoint after a failed step (%w): its ledger may count a step the parameters do not reflect", t.failed)
	}
	if !t.leader() {
		return nil, errNotLeader
	}
	c := &checkpoint.Training{
		Optimizer:      t.opt.Name(),
		OptimizerState: t.opt.State(),
		Step:           t.step,
		Epoch:          t.step / t.plan.StepsPerEpoch,
		Noise:          t.Noise(),
		Dataset:        t.fingerprint(),
		ClassNames:     slices.Clone(t.classes),
		Settings:       maps.Clone(t.cfg.Settings),
		Plan:           t.plan,
		RunID:          t.runID,
		Rewinds:        slices.Clone(t.rewinds),
		Sampler:        t.sampler.kind(),
		SamplerState:   t.sampler.state(),
		EpochLoss:      t.epochLoss,
		EpochCorrect:   t.epochCorrect,
		EpochExamples:  t.epochExamples,
		TestLoss:       t.testLoss,
		TestAccuracy:   t.testAccuracy,
		BudgetHead:     t.budgetHead(), // budget.go: nil without a reservation
	}
	t.model.WriteCheckpoint(c)
	t.captureAverage(c)
	if err := t.captureIterate(c); err != nil {
		return nil, err
	}
	if t.cfg.Seed != nil {
		c.Seed, c.Seeded = *t.cfg.Seed, true
	}
	if t.sampler.perm != nil && t.step%t.plan.StepsPerEpoch != 0 {
		c.Perm = slices.Clone(t.sampler.perm)
	}
	if t.ledger != nil {
		var err error
		if c.Ledger, err = cloneLedger(t.ledger, nil); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Restore continues the run of checkpoint c: it checks that c belongs to this run (model,
// data set, optimizer, sampling, clipping, δ, seed, settings, parameter averaging), that c's ledger records
// exactly the steps c's plan implies (q, and z or the rule's noise schedule, step by
// step), and that finishing this trainer's plan from c's step stays within the target ε,
// then loads the parameters, the parameter average, the optimizer's state, the ledger, the position in the plan,
// the sampler and the run's identity (RunID, rewinds).
//
// The plan may have more epochs than c's. A calibrated trainer takes c's noise
// multiplier (the past steps used it) and checks the budget with it; a trainer with a
// fixed noise multiplier must have c's.
//
// A trainer that has already taken steps accepts only a state of its own run at or after
// its own; an earlier one (a rewind) needs AllowRewind, and then the trainer's ledger
// keeps the steps that the rewind discards. Errors wrap ErrMismatch, checkpoint.ErrInvalid (a
// ledger that does not match its plan), ErrRewind or ErrBudget, and leave the trainer
// unchanged.
func (t *Trainer) Restore(c *checkpoint.Training, opts ...RestoreOption) error {
	if c == nil {
		return fmt.Errorf("%w: nil checkpoint", checkpoint.ErrInvalid)
	}
	var rc restoreConfig
	for _, o := range opts {
		if o != nil {
			o(&rc)
		}
	}
	if err := t.compatible(c); err != nil {
		return err
	}
	if err := checkpoint.CheckRewinds(c.Rewinds, c.Step, c.Plan.Steps); err != nil {
		return fmt.Errorf("%w: %v", checkpoint.ErrInvalid, err)
	}
	if t.plan.Private {
		if c.Ledger == nil {
			return fmt.Errorf("%w: private training without a ledger", checkpoint.ErrInvalid)
		}
		if err := checkpoint.VerifyLedger(c.Ledger, c.Plan, c.Rewinds, c.Step, t.scaler); err != nil {
			return fmt.Errorf("%w: %v", checkpoint.ErrInvalid, err)
		}
	}
	// The lineage the trainer continues: c's, or after a rewind the trainer's own with
	// the rewind added, so that the ledger keeps every step taken.
	ledger, rewinds, runID := c.Ledger, slices.Clone(c.Rewinds), c.RunID
	if runID == "" { // a checkpoint written before runs had identifiers
		runID = t.runID
	}
	if t.step > 0 || len(t.rewinds) > 0 || (t.ledger != nil && t.ledger.Steps() > 0) {
		back, err := t.lineageOf(c)
		if err != nil {
			return err
		}
		if back {
			if !rc.allowRewind {
				return fmt.Errorf("%w: the trainer is at step %d (%d steps taken); the checkpoint at step %d is an earlier state of the same run, and the steps it would discard have spent privacy; rewind explicitly (AllowRewind, train -allow-rewind) to keep them counted", ErrRewind, t.step, t.lineageSteps(), c.Step)
			}
			ledger = t.ledger
			rewinds = append(slices.Clone(t.rewinds), checkpoint.Rewind{From: t.step, To: c.Step})
		}
	}
	z := t.plan.NoiseMultiplier
	spent := t.plan.Spent
	if t.plan.Private {
		z = c.Plan.NoiseMultiplier
		var err error
		if spent, err = planSpent(ledger, t.cfg.Privacy.Accountant, t.plan.SampleRate, z, t.scaler, c.Step, t.plan.Steps, t.plan.Delta); err != nil {
			return fmt.Errorf("training: privacy of the resumed plan: %w", err)
		}
		if t.plan.TargetEpsilon > 0 && spent.Epsilon > t.plan.TargetEpsilon {
			return fmt.Errorf("%w: continuing to %d epochs (%d steps) with the checkpoint's noise multiplier %.6g spends ε = %.4g at δ = %g, above the target ε = %g; raise the target or keep to %d epochs", ErrBudget, t.plan.Epochs, t.plan.Steps, z, spent.Epsilon, t.plan.Delta, t.plan.TargetEpsilon, c.Plan.Epochs)
		}
	}
	average, err := t.restoredAverage(c)
	if err != nil {
		return err
	}
	smp := *t.sampler
	if err := smp.restore(c.Sampler, c.SamplerState, slices.Clone(c.Perm)); err != nil {
		return fmt.Errorf("%w: %v", checkpoint.ErrInvalid, err)
	}
	old := make([]float64, len(t.params))
	t.model.Params(old)
	if err := t.model.SetParams(c.Params); err != nil {
		return fmt.Errorf("%w: %v", checkpoint.ErrInvalid, err)
	}
	opt, priv := t.opt, t.private
	if priv != nil && z != t.plan.NoiseMultiplier {
		// SetState below replaces the fresh private step's noise source by the checkpoint's.
		p, err := t.buildPrivate(z, nil)
		if err != nil {
			_ = t.model.SetParams(old)
			return err
		}
		opt, priv = p, p
	}
	if err := opt.SetState(c.OptimizerState); err != nil {
		_ = t.model.SetParams(old)
		return fmt.Errorf("%w: optimizer state: %v", checkpoint.ErrInvalid, err)
	}
	if t.ledger != nil && ledger != t.ledger {
		b, err := ledger.MarshalJSON()
		if err == nil && !faults.Active(faults.LedgerReset) { // the fault: audit tests only
			err = t.ledger.UnmarshalJSON(b)
		}
		if err != nil { // not reachable for a ledger that Load or Checkpoint produced
			return fmt.Errorf("%w: ledger: %v", checkpoint.ErrInvalid, err)
		}
	}
	t.runID, t.rewinds = runID, rewinds
	t.opt, t.private = opt, priv
	t.average = average
	*t.sampler = smp
	t.step = c.Step
	t.epochLoss, t.epochCorrect, t.epochExamples = c.EpochLoss, c.EpochCorrect, c.EpochExamples
	t.testLoss, t.testAccuracy = c.TestLoss, c.TestAccuracy
	t.plan.NoiseMultiplier, t.plan.Spent = z, spent
	t.noteRestored(c) // budget.go: the parent and witnesses of the next reservation
	return nil
}

// compatible reports why c cannot continue this trainer's run.
func (t *Trainer) compatible(c *checkpoint.Training) error {
	if err := t.checkIterateResume(c); err != nil {
		return err
	}
	mismatch := func(what string, ckpt, this any) error {
		return fmt.Errorf("%w: %s: checkpoint has %v, this run %v", ErrMismatch, what, ckpt, this)
	}
	if what, ckpt, this, ok := t.model.MatchesCheckpoint(c); !ok {
		return mismatch(what, ckpt, this)
	}
	// The data's size, shape, classes and labels first, its content last: a run that
	// differs in a setting (another -scale) is told so rather than that its data differ.
	labels := t.dataset
	labels.Content = ""
	switch {
	case !c.Dataset.Equal(labels):
		return mismatch("training set", c.Dataset, labels)
	case c.Optimizer != t.opt.Name():
		return mismatch("optimizer", c.Optimizer, t.opt.Name())
	case c.EMA != t.cfg.Averaging.EMA:
		return mismatch("parameter averaging (EMA decay, 0: none)", c.EMA, t.cfg.Averaging.EMA)
	case !maps.Equal(c.Settings, t.cfg.Settings):
		return fmt.Errorf("%w: settings differ: %s", ErrMismatch, settingsDiff(c.Settings, t.cfg.Settings))
	}
	p, q := c.Plan, t.plan
	switch {
	case p.Private != q.Private:
		return mismatch("private training", p.Private, q.Private)
	case p.DatasetSize != q.DatasetSize:
		return mismatch("training-set size", p.DatasetSize, q.DatasetSize)
	case p.BatchSize != q.BatchSize:
		return mismatch("batch size", p.BatchSize, q.BatchSize)
	case p.Sampling != q.Sampling:
		return mismatch("sampling", p.Sampling, q.Sampling)
	case p.ClipRule != q.ClipRule || p.Clip != q.Clip:
		return mismatch("clipping", p.ClipRule, q.ClipRule)
	case p.Delta != q.Delta:
		return mismatch("δ", p.Delta, q.Delta)
	case p.NoiseSchedule != q.NoiseSchedule:
		return mismatch("noise schedule", p.NoiseSchedule, q.NoiseSchedule)
	case q.Private && !q.Calibrated && p.NoiseMultiplier != q.NoiseMultiplier:
		return mismatch("noise multiplier", p.NoiseMultiplier, q.NoiseMultiplier)
	case c.Step > q.Steps:
		return fmt.Errorf("%w: the checkpoint is at step %d, beyond this plan's %d steps (%d epochs)", ErrMismatch, c.Step, q.Steps, q.Epochs)
	}
	if seeded := t.cfg.Seed != nil; c.Seeded != seeded || seeded && c.Seed != *t.cfg.Seed {
		return mismatch("randomness", describeSeed(c.Seed, c.Seeded), describeSeed(derefOr(t.cfg.Seed), seeded))
	}
	// A checkpoint older than the content fingerprint has none: its content cannot be
	// checked (the command warns), the labels were.
	if this := t.fingerprint(); c.Dataset.Content != "" && c.Dataset.Content != this.Content {
		return fmt.Errorf("%w: training set content: checkpoint has content sha256 %.12s…, this data %.12s…: the same size, shape and labels but other examples",
			ErrMismatch, c.Dataset.Content, this.Content)
	}
	return nil
}

func settingsDiff(ckpt, this map[string]string) string {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(ckpt)) {
		if v, ok := this[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s=%q only in the checkpoint", k, ckpt[k]))
		} else if v != ckpt[k] {
			diffs = append(diffs, fmt.Sprintf("%s: checkpoint %q, this run %q", k, ckpt[k], v))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(this)) {
		if _, ok := ckpt[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s=%q only in this run", k, this[k]))
		}
	}
	return strings.Join(diffs, "; ")
}

// describeSeed names a run's randomness for messages.
func describeSeed(seed uint64, seeded bool) string {
	if !seeded {
		return "unseeded (" + privrand.SecureOrigin + ")"
	}
	return fmt.Sprintf("seed %d", seed)
}

func derefOr(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
