package nn

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/internal/faults"
)

// Checkpoint capture and restore: Trainer.Checkpoint copies a trainer's state into a
// Checkpoint, Trainer.Restore checks a Checkpoint against the trainer's run and loads it.
// The file layout is checkpoint_codec.go's; Save and Load (save.go) join the two.

var (
	// ErrCheckpoint reports a file that is a sound privtrain checkpoint container but not a
	// valid training checkpoint: a foreign one (no training metadata), or one whose tensors
	// and metadata do not fit together. Damaged files give package checkpoint's errors
	// (checkpoint.ErrCorrupt, ErrTruncated, ErrChecksum, ErrNotCheckpoint) instead.
	ErrCheckpoint = errors.New("nn: invalid training checkpoint")
	// ErrMismatch reports a checkpoint that belongs to another run than the trainer's:
	// another model, data set, optimizer, sampling, clipping, δ, noise or settings.
	ErrMismatch = errors.New("nn: checkpoint does not match this training run")
)

// Checkpoint is the complete state of a training run: everything a Trainer needs to
// continue exactly where it stopped, and what Restore checks before it does.
//
// A checkpoint of a seeded run holds the seed and the exact positions of the noise and
// sampling generators, and so resumes bit for bit; anyone who holds it can also strip
// the noise from the parameters. A secure run's checkpoint holds neither generator's
// state: both are reseeded from crypto/rand on Restore (dpoptim.Noise.MarshalBinary
// explains why). The running training loss and accuracy of the epoch in progress are
// computed on raw training data and are not covered by ε: share the parameters, not the
// checkpoint.
type Checkpoint struct {
	// Model, DType and Layout describe the network; Params are its parameters in Layout
	// order (stored as one named tensor per entry, with its real shape).
	Model  string
	DType  DType
	Layout []ParamInfo
	Params []float64
	// EMA is the decay of the run's parameter average (TrainerConfig.EMA; 0: none),
	// EMAParams the average in Layout order (full precision; nil without averaging, or
	// at step 0 before Run started it) and EMASteps the updates it holds (Step).
	// ModelParams picks EMAParams when present: models built from the checkpoint use
	// the averaged parameters.
	EMA       float64
	EMAParams []float64
	EMASteps  int
	// Architecture is the network's description (nil in checkpoints written before
	// checkpoints stored one): ModelFromCheckpoint rebuilds the model from it.
	Architecture *Architecture
	// Optimizer is the optimizer's name ("DP-Adam") and OptimizerState its State(): for
	// private training its Step is the number of private steps, which must be Step.
	Optimizer      string
	OptimizerState dpoptim.State
	// Ledger is the privacy ledger of the steps so far (nil for non-private training).
	Ledger *accountant.Ledger
	// Step is the number of steps completed; Epoch the number of epochs completed.
	Step, Epoch int
	// Noise is "secure", "seeded(<seed>)" or "none" (non-private training).
	Noise string
	// Seed is the run's seed when Seeded.
	Seed   uint64
	Seeded bool
	// Dataset is the fingerprint of the training set.
	Dataset Fingerprint
	// Settings are the caller's TrainerConfig.Settings.
	Settings map[string]string
	// Plan is the plan the run was saved under.
	Plan Plan
	// RunID identifies the run (Trainer.RunID): random, made when the run started, kept
	// by its resumes. Rewinds are the rewinds of the run's lineage, oldest first: the
	// ledger holds LineageSteps steps, Step of them on the current branch.
	RunID   string
	Rewinds []Rewind

	sampler       string // samplerSecure or samplerSeeded
	samplerState  []byte // seeded sampler's ChaCha8 state
	perm          []int  // Shuffle: the current epoch's permutation, mid-epoch only
	epochLoss     float64
	epochCorrect  int
	epochExamples int
	testLoss      float64
	testAccuracy  float64
}

// Spent returns the privacy spent by the checkpoint's steps at its plan's δ (+Inf for
// non-private training).
func (c *Checkpoint) Spent() (accountant.Spent, error) {
	if c.Ledger == nil {
		return accountant.Spent{Epsilon: math.Inf(1)}, nil
	}
	return c.Ledger.Epsilon(c.Plan.Delta)
}

// Checkpoint captures the trainer's state: call it between steps (after Run returns, or
// from a callback). The checkpoint shares nothing with the trainer.
func (t *Trainer) Checkpoint() (*Checkpoint, error) {
	if t.failed != nil {
		return nil, fmt.Errorf("nn: no checkpoint after a failed step (%w): its ledger may count a step the parameters do not reflect", t.failed)
	}
	c := &Checkpoint{
		Model:          t.model.Name(),
		DType:          t.model.DType(),
		Layout:         t.model.Layout(),
		Architecture:   t.model.storedArchitecture(),
		Params:         make([]float64, t.model.NumParams()),
		Optimizer:      t.opt.Name(),
		OptimizerState: t.opt.State(),
		Step:           t.step,
		Epoch:          t.step / t.plan.StepsPerEpoch,
		Noise:          t.Noise(),
		Dataset:        t.dataset,
		Settings:       maps.Clone(t.cfg.Settings),
		Plan:           t.plan,
		RunID:          t.runID,
		Rewinds:        slices.Clone(t.rewinds),
		sampler:        t.sampler.kind(),
		samplerState:   t.sampler.state(),
		epochLoss:      t.epochLoss,
		epochCorrect:   t.epochCorrect,
		epochExamples:  t.epochExamples,
		testLoss:       t.testLoss,
		testAccuracy:   t.testAccuracy,
	}
	t.model.Params(c.Params)
	t.captureAverage(c)
	if t.cfg.Seed != nil {
		c.Seed, c.Seeded = *t.cfg.Seed, true
	}
	if t.sampler.perm != nil && t.step%t.plan.StepsPerEpoch != 0 {
		c.perm = slices.Clone(t.sampler.perm)
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
// keeps the steps that the rewind discards. Errors wrap ErrMismatch, ErrCheckpoint (a
// ledger that does not match its plan), ErrRewind or ErrBudget, and leave the trainer
// unchanged.
func (t *Trainer) Restore(c *Checkpoint, opts ...RestoreOption) error {
	if c == nil {
		return fmt.Errorf("%w: nil checkpoint", ErrCheckpoint)
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
	if err := checkRewinds(c.Rewinds, c.Step, c.Plan.Steps); err != nil {
		return fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	if t.plan.Private {
		if c.Ledger == nil {
			return fmt.Errorf("%w: private training without a ledger", ErrCheckpoint)
		}
		if err := verifyLedger(c.Ledger, c.Plan, c.Rewinds, c.Step, t.scaler); err != nil {
			return fmt.Errorf("%w: %v", ErrCheckpoint, err)
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
			rewinds = append(slices.Clone(t.rewinds), Rewind{From: t.step, To: c.Step})
		}
	}
	z := t.plan.NoiseMultiplier
	spent := t.plan.Spent
	if t.plan.Private {
		z = c.Plan.NoiseMultiplier
		var err error
		if spent, err = planSpent(ledger, t.cfg.Privacy.Accountant, t.plan.SampleRate, z, t.scaler, c.Step, t.plan.Steps, t.plan.Delta); err != nil {
			return fmt.Errorf("nn: privacy of the resumed plan: %w", err)
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
	if err := smp.restore(c.sampler, c.samplerState, slices.Clone(c.perm)); err != nil {
		return fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	old := make([]float64, len(t.params))
	t.model.Params(old)
	if err := t.model.SetParams(c.Params); err != nil {
		return fmt.Errorf("%w: %v", ErrCheckpoint, err)
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
		return fmt.Errorf("%w: optimizer state: %v", ErrCheckpoint, err)
	}
	if t.ledger != nil && ledger != t.ledger {
		b, err := ledger.MarshalJSON()
		if err == nil && !faults.Active(faults.LedgerReset) { // the fault: audit tests only
			err = t.ledger.UnmarshalJSON(b)
		}
		if err != nil { // not reachable for a ledger that Load or Checkpoint produced
			return fmt.Errorf("%w: ledger: %v", ErrCheckpoint, err)
		}
	}
	t.runID, t.rewinds = runID, rewinds
	t.opt, t.private = opt, priv
	t.average = average
	*t.sampler = smp
	t.step = c.Step
	t.epochLoss, t.epochCorrect, t.epochExamples = c.epochLoss, c.epochCorrect, c.epochExamples
	t.testLoss, t.testAccuracy = c.testLoss, c.testAccuracy
	t.plan.NoiseMultiplier, t.plan.Spent = z, spent
	return nil
}

// compatible reports why c cannot continue this trainer's run.
func (t *Trainer) compatible(c *Checkpoint) error {
	mismatch := func(what string, ckpt, this any) error {
		return fmt.Errorf("%w: %s: checkpoint has %v, this run %v", ErrMismatch, what, ckpt, this)
	}
	m := t.model
	switch {
	case c.Model != m.Name():
		return mismatch("model", c.Model, m.Name())
	case c.DType != m.DType():
		return mismatch("dtype", c.DType, m.DType())
	case !layoutsEqual(c.Layout, m.Layout()):
		return mismatch("parameter layout", c.Layout, m.Layout())
	case len(c.Params) != m.NumParams():
		return mismatch("parameter count", len(c.Params), m.NumParams())
	case !c.Dataset.Equal(t.dataset):
		return mismatch("training set", c.Dataset, t.dataset)
	case c.Optimizer != t.opt.Name():
		return mismatch("optimizer", c.Optimizer, t.opt.Name())
	case c.EMA != t.cfg.EMA:
		return mismatch("parameter averaging (EMA decay, 0: none)", c.EMA, t.cfg.EMA)
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
	return nil
}

func layoutsEqual(a, b []ParamInfo) bool {
	return slices.EqualFunc(a, b, func(x, y ParamInfo) bool { return x.Name == y.Name && slices.Equal(x.Shape, y.Shape) })
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
		return "unseeded (crypto/rand)"
	}
	return fmt.Sprintf("seed %d", seed)
}

func derefOr(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
