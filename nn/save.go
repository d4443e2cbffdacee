package nn

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/faults"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

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

// checkpointKind marks a training checkpoint inside the container's metadata.
const checkpointKind = "privtrain-training/1"

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
	// Architecture is the network's description (nil in checkpoints written before
	// checkpoints stored one): ModelFromCheckpoint rebuilds the model from it.
	Architecture *Architecture
	// Optimizer is the optimizer's name ("DP-Adam") and OptimizerState its State().
	Optimizer      string
	OptimizerState map[string][]float64
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
		Settings:       cloneSettings(t.cfg.Settings),
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
// data set, optimizer, sampling, clipping, δ, seed, settings), that c's ledger records
// exactly the steps c's plan implies (q, and z or the rule's noise schedule, step by
// step), and that finishing this trainer's plan from c's step stays within the target ε,
// then loads the parameters, the optimizer's state, the ledger, the position in the plan,
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
	this := "unseeded (crypto/rand)"
	if t.cfg.Seed != nil {
		this = fmt.Sprintf("seed %d", *t.cfg.Seed)
	}
	ckpt := "unseeded (crypto/rand)"
	if c.Seeded {
		ckpt = fmt.Sprintf("seed %d", c.Seed)
	}
	if ckpt != this {
		return mismatch("randomness", ckpt, this)
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

// Save writes c to path atomically (package checkpoint: a temporary file in the same
// directory, synced and renamed over path, mode 0600): a reader of path, or a crash at
// any moment, sees the previous checkpoint or the new one, never a partial file.
func Save(path string, c *Checkpoint) error { return save(path, c, nil) }

// save is Save, with the MAC of SaveWithKey when key is not nil.
func save(path string, c *Checkpoint, key []byte) error {
	f, err := c.file()
	if err != nil {
		return err
	}
	if key != nil {
		f.Metadata[keyMAC] = hex.EncodeToString(fileMAC(f, key))
	}
	return checkpoint.WriteFile(path, f) // "checkpoint: PATH: …" already says what and where
}

// Load reads and verifies the checkpoint at path. A damaged file gives an error matching
// checkpoint.ErrCorrupt (or ErrTruncated, ErrChecksum, ErrNotCheckpoint); a sound
// container that is not a valid training checkpoint gives ErrCheckpoint.
func Load(path string) (*Checkpoint, error) { return load(path, nil) }

// load is Load, checking the MAC of SaveWithKey first when key is not nil.
func load(path string, key []byte) (*Checkpoint, error) {
	f, err := checkpoint.ReadFile(path)
	if err != nil {
		return nil, err // "checkpoint: PATH: …" already says what and where
	}
	if key != nil {
		if err := verifyMAC(path, f, key); err != nil {
			return nil, err
		}
	}
	c, err := fromFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// decode reads a checkpoint from r (for tests and fuzzing).
func decode(r io.Reader, opts ...checkpoint.ReadOption) (*Checkpoint, error) {
	f, err := checkpoint.Decode(r, opts...)
	if err != nil {
		return nil, err
	}
	return fromFile(f)
}

// Metadata keys and tensor names of a training checkpoint.
const (
	keyKind      = "nn.kind"
	keyModel     = "nn.model"
	keyDType     = "nn.dtype"
	keyLayout    = "nn.layout"
	keyOptimizer = "nn.optimizer"
	keyLedger    = "nn.ledger"
	keyPosition  = "nn.position"
	keyNoise     = "nn.noise"
	keySeed      = "nn.seed"
	keyDataset   = "nn.dataset"
	keySettings  = "nn.settings"
	keyPlan      = "nn.plan"
	keySampler   = "nn.sampler"
	keyArch      = "nn.architecture"

	paramPrefix     = "params/"
	optimizerPrefix = "optimizer/"
	tensorSampler   = "sampler/state"
	tensorPerm      = "sampler/perm"
)

// planJSON is a Plan as stored: the definition of the run, not its derived ε.
type planJSON struct {
	DatasetSize     int     `json:"n"`
	BatchSize       int     `json:"batch"`
	PhysicalBatch   int     `json:"physical_batch"`
	Sampling        string  `json:"sampling"`
	SampleRate      float64 `json:"q"`
	StepsPerEpoch   int     `json:"steps_per_epoch"`
	Epochs          int     `json:"epochs"`
	Steps           int     `json:"steps"`
	Private         bool    `json:"private"`
	NoiseMultiplier float64 `json:"noise_multiplier"`
	NoiseSchedule   bool    `json:"noise_schedule,omitempty"`
	Calibrated      bool    `json:"calibrated"`
	Clip            float64 `json:"clip"`
	ClipRule        string  `json:"clip_rule"`
	Delta           float64 `json:"delta"`
	TargetEpsilon   float64 `json:"target_epsilon"`
}

// paramJSON is one entry of the stored parameter layout.
type paramJSON struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

// positionJSON is where in the plan the run stopped, with the running statistics of an
// unfinished epoch and the last evaluation (null when none ran).
type positionJSON struct {
	Step          int      `json:"step"`
	EpochLoss     float64  `json:"epoch_loss"`
	EpochCorrect  int      `json:"epoch_correct"`
	EpochExamples int      `json:"epoch_examples"`
	TestLoss      *float64 `json:"test_loss"`
	TestAccuracy  *float64 `json:"test_accuracy"`
	RunID         string   `json:"run_id,omitempty"`
	Rewinds       [][2]int `json:"rewinds,omitempty"` // [from, to] per rewind, oldest first
}

func finiteOrNil(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// file lays c out as named tensors and metadata.
func (c *Checkpoint) file() (*checkpoint.File, error) {
	if len(c.Params) != layoutSize(c.Layout) {
		return nil, fmt.Errorf("%w: %d parameters for a layout of %d", ErrCheckpoint, len(c.Params), layoutSize(c.Layout))
	}
	f := &checkpoint.File{Tensors: map[string]checkpoint.Tensor{}, Metadata: map[string]string{}}
	off := 0
	for _, p := range c.Layout {
		v := c.Params[off : off+p.Size()]
		off += p.Size()
		if c.DType == Float32 {
			v32 := make([]float32, len(v))
			for i, x := range v {
				v32[i] = float32(x)
			}
			f.Tensors[paramPrefix+p.Name] = checkpoint.F32(p.Shape, v32)
		} else {
			f.Tensors[paramPrefix+p.Name] = checkpoint.F64(p.Shape, v)
		}
	}
	for k, v := range c.OptimizerState {
		f.Tensors[optimizerPrefix+k] = checkpoint.F64([]int{len(v)}, v)
	}
	if c.samplerState != nil {
		f.Tensors[tensorSampler] = checkpoint.U8([]int{len(c.samplerState)}, c.samplerState)
	}
	if c.perm != nil {
		perm := make([]int64, len(c.perm))
		for i, v := range c.perm {
			perm[i] = int64(v)
		}
		f.Tensors[tensorPerm] = checkpoint.I64([]int{len(perm)}, perm)
	}
	p := c.Plan
	plan := planJSON{
		DatasetSize: p.DatasetSize, BatchSize: p.BatchSize, PhysicalBatch: p.PhysicalBatch,
		Sampling: p.Sampling.String(), SampleRate: p.SampleRate, StepsPerEpoch: p.StepsPerEpoch,
		Epochs: p.Epochs, Steps: p.Steps, Private: p.Private, NoiseMultiplier: p.NoiseMultiplier,
		Calibrated: p.Calibrated, Clip: p.Clip, ClipRule: p.ClipRule, Delta: p.Delta,
		TargetEpsilon: p.TargetEpsilon, NoiseSchedule: p.NoiseSchedule,
	}
	pos := positionJSON{
		Step: c.Step, EpochLoss: c.epochLoss, EpochCorrect: c.epochCorrect,
		EpochExamples: c.epochExamples, TestLoss: finiteOrNil(c.testLoss),
		TestAccuracy: finiteOrNil(c.testAccuracy), RunID: c.RunID,
	}
	for _, r := range c.Rewinds {
		pos.Rewinds = append(pos.Rewinds, [2]int{r.From, r.To})
	}
	layout := make([]paramJSON, len(c.Layout))
	for i, p := range c.Layout {
		layout[i] = paramJSON{Name: p.Name, Shape: p.Shape}
	}
	settings := c.Settings
	if settings == nil {
		settings = map[string]string{}
	}
	for key, v := range map[string]any{keyLayout: layout, keyPlan: plan, keyPosition: pos, keyDataset: c.Dataset, keySettings: settings} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCheckpoint, key, err)
		}
		f.Metadata[key] = string(b)
	}
	if c.Ledger != nil {
		b, err := c.Ledger.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%w: ledger: %v", ErrCheckpoint, err)
		}
		f.Metadata[keyLedger] = string(b)
	}
	if c.Architecture != nil {
		b, err := json.Marshal(c.Architecture)
		if err != nil {
			return nil, fmt.Errorf("%w: architecture: %v", ErrCheckpoint, err)
		}
		f.Metadata[keyArch] = string(b)
	}
	f.Metadata[keyKind] = checkpointKind
	f.Metadata[keyModel] = c.Model
	f.Metadata[keyDType] = c.DType.String()
	f.Metadata[keyOptimizer] = c.Optimizer
	f.Metadata[keyNoise] = c.Noise
	f.Metadata[keySampler] = c.sampler
	if c.Seeded {
		f.Metadata[keySeed] = strconv.FormatUint(c.Seed, 10)
	}
	return f, nil
}

func layoutSize(layout []ParamInfo) int {
	n := 0
	for _, p := range layout {
		n += p.Size()
	}
	return n
}

// fromFile checks a decoded container and turns it into a Checkpoint. Everything that can
// be checked without a trainer is checked here, so that a checkpoint that loads is
// internally consistent.
func fromFile(f *checkpoint.File) (*Checkpoint, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrCheckpoint, fmt.Sprintf(format, a...))
	}
	md := f.Metadata
	kind, ok := md[keyKind]
	if !ok {
		return nil, bad("no %q metadata: not a training checkpoint (written by another program?)", keyKind)
	}
	if kind != checkpointKind {
		return nil, bad("kind %q, want %q", kind, checkpointKind)
	}
	known := []string{keyKind, keyModel, keyDType, keyLayout, keyOptimizer, keyLedger, keyPosition, keyNoise, keySeed, keyDataset, keySettings, keyPlan, keySampler, keyArch, keyMAC}
	for k := range md {
		if !slices.Contains(known, k) {
			return nil, bad("unknown metadata key %q", k)
		}
	}
	for _, k := range []string{keyModel, keyDType, keyLayout, keyOptimizer, keyPosition, keyNoise, keyDataset, keySettings, keyPlan, keySampler} {
		if _, ok := md[k]; !ok {
			return nil, bad("missing metadata %q", k)
		}
	}
	c := &Checkpoint{Model: md[keyModel], Optimizer: md[keyOptimizer], Noise: md[keyNoise], sampler: md[keySampler]}
	switch md[keyDType] {
	case "float32":
		c.DType = Float32
	case "float64":
		c.DType = Float64
	default:
		return nil, bad("dtype %q", md[keyDType])
	}
	var plan planJSON
	var pos positionJSON
	var layout []paramJSON
	for _, d := range []struct {
		key string
		dst any
	}{{keyLayout, &layout}, {keyPlan, &plan}, {keyPosition, &pos}, {keyDataset, &c.Dataset}, {keySettings, &c.Settings}} {
		if err := strictJSON(md[d.key], d.dst); err != nil {
			return nil, bad("%s: %v", d.key, err)
		}
	}
	if arch, ok := md[keyArch]; ok {
		c.Architecture = new(Architecture)
		if err := strictJSON(arch, c.Architecture); err != nil {
			return nil, bad("%s: %v", keyArch, err)
		}
		if err := c.Architecture.check(); err != nil {
			return nil, bad("%s: %v", keyArch, err)
		}
	}
	if err := c.setPlan(plan); err != nil {
		return nil, bad("plan: %v", err)
	}
	for _, p := range layout {
		c.Layout = append(c.Layout, ParamInfo{Name: p.Name, Shape: p.Shape})
	}
	if err := c.setLayoutAndParams(f.Tensors); err != nil {
		return nil, bad("%v", err)
	}
	if err := c.setPosition(pos); err != nil {
		return nil, bad("position: %v", err)
	}
	if err := c.setPrivacy(md); err != nil {
		return nil, bad("%v", err)
	}
	if err := c.setOptimizerAndSampler(f.Tensors); err != nil {
		return nil, bad("%v", err)
	}
	if c.Dataset.Size != c.Plan.DatasetSize {
		return nil, bad("data set of %d examples, plan for %d", c.Dataset.Size, c.Plan.DatasetSize)
	}
	if len(c.Settings) == 0 {
		c.Settings = nil
	}
	return c, nil
}

// strictJSON decodes one JSON value with no unknown fields and nothing after it.
func strictJSON(s string, dst any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func (c *Checkpoint) setPlan(p planJSON) error {
	sampling, err := ParseSampling(p.Sampling)
	if err != nil {
		return err
	}
	switch {
	case p.DatasetSize < 1 || p.BatchSize < 1 || p.BatchSize > p.DatasetSize:
		return fmt.Errorf("batch %d for %d examples", p.BatchSize, p.DatasetSize)
	case p.StepsPerEpoch != accountant.StepsPerEpoch(p.DatasetSize, p.BatchSize):
		return fmt.Errorf("%d steps per epoch, want ⌈%d/%d⌉", p.StepsPerEpoch, p.DatasetSize, p.BatchSize)
	case p.Epochs < 1 || p.Epochs > math.MaxInt32/p.StepsPerEpoch || p.Steps != p.Epochs*p.StepsPerEpoch:
		return fmt.Errorf("%d epochs, %d steps", p.Epochs, p.Steps)
	case p.SampleRate != float64(p.BatchSize)/float64(p.DatasetSize):
		return fmt.Errorf("q = %v, want %d/%d", p.SampleRate, p.BatchSize, p.DatasetSize)
	case p.PhysicalBatch < 1:
		return fmt.Errorf("physical batch %d", p.PhysicalBatch)
	}
	if p.Private {
		switch {
		case !(p.NoiseMultiplier > 0) || !finite(p.NoiseMultiplier):
			return fmt.Errorf("noise multiplier %v", p.NoiseMultiplier)
		case !(p.Clip > 0) || !finite(p.Clip):
			return fmt.Errorf("clip %v", p.Clip)
		case !(p.Delta > 0 && p.Delta < 1):
			return fmt.Errorf("δ = %v", p.Delta)
		case !(p.TargetEpsilon >= 0) || !finite(p.TargetEpsilon):
			return fmt.Errorf("target ε = %v", p.TargetEpsilon)
		}
	} else if p.NoiseMultiplier != 0 || p.Clip != 0 || p.ClipRule != "" || p.Delta != 0 || p.TargetEpsilon != 0 || p.Calibrated || p.NoiseSchedule {
		return errors.New("privacy settings for non-private training")
	}
	c.Plan = Plan{
		DatasetSize: p.DatasetSize, BatchSize: p.BatchSize, PhysicalBatch: p.PhysicalBatch,
		Sampling: sampling, SampleRate: p.SampleRate, StepsPerEpoch: p.StepsPerEpoch,
		Epochs: p.Epochs, Steps: p.Steps, Private: p.Private, NoiseMultiplier: p.NoiseMultiplier,
		Calibrated: p.Calibrated, Clip: p.Clip, ClipRule: p.ClipRule, Delta: p.Delta,
		TargetEpsilon: p.TargetEpsilon, Spent: accountant.Spent{Epsilon: math.Inf(1)},
		NoiseSchedule: p.NoiseSchedule,
	}
	return nil
}

// maxParams bounds the parameter count a checkpoint may declare (the container's own size
// limit bounds the data; this keeps the layout arithmetic far from overflow).
const maxParams = 1 << 40

func (c *Checkpoint) setLayoutAndParams(tensors map[string]checkpoint.Tensor) error {
	if len(c.Layout) == 0 {
		return errors.New("empty parameter layout")
	}
	total := 0
	seen := map[string]bool{}
	for _, p := range c.Layout {
		if p.Name == "" || seen[p.Name] {
			return fmt.Errorf("parameter name %q empty or repeated", p.Name)
		}
		seen[p.Name] = true
		size := 1
		for _, s := range p.Shape {
			if s < 1 || s > maxParams || size > maxParams/s {
				return fmt.Errorf("parameter %s: shape %v", p.Name, p.Shape)
			}
			size *= s
		}
		if total += size; total > maxParams {
			return fmt.Errorf("layout of more than %d parameters", maxParams)
		}
	}
	for name := range tensors {
		if p, ok := strings.CutPrefix(name, paramPrefix); ok && !seen[p] {
			return fmt.Errorf("tensor %q is not in the layout", name)
		}
	}
	for _, p := range c.Layout {
		t, ok := tensors[paramPrefix+p.Name]
		if !ok {
			return fmt.Errorf("missing parameter tensor %q", paramPrefix+p.Name)
		}
		if !slices.Equal(t.Shape, p.Shape) {
			return fmt.Errorf("parameter %s has shape %v, layout says %v", p.Name, t.Shape, p.Shape)
		}
	}
	// Every tensor exists with its layout shape, so the container has checked that the
	// data is there: total is backed by bytes read, not just declared.
	params := make([]float64, 0, total)
	for _, p := range c.Layout {
		t := tensors[paramPrefix+p.Name]
		var v []float64
		switch {
		case c.DType == Float32 && t.DType == checkpoint.Float32:
			v32, err := t.Float32s()
			if err != nil {
				return fmt.Errorf("parameter %s: %v", p.Name, err)
			}
			v = make([]float64, len(v32))
			for i, x := range v32 {
				v[i] = float64(x)
			}
		case c.DType == Float64 && t.DType == checkpoint.Float64:
			var err error
			if v, err = t.Float64s(); err != nil {
				return fmt.Errorf("parameter %s: %v", p.Name, err)
			}
		default:
			return fmt.Errorf("parameter %s stored as %v in a %v checkpoint", p.Name, t.DType, c.DType)
		}
		for i, x := range v {
			if !finite(x) {
				return fmt.Errorf("parameter %s[%d] = %v", p.Name, i, x)
			}
		}
		params = append(params, v...)
	}
	c.Params = params
	return nil
}

func (c *Checkpoint) setPosition(p positionJSON) error {
	spe := c.Plan.StepsPerEpoch
	switch {
	case p.Step < 0 || p.Step > c.Plan.Steps:
		return fmt.Errorf("step %d of a %d-step plan", p.Step, c.Plan.Steps)
	case p.EpochExamples < 0 || p.EpochCorrect < 0 || p.EpochCorrect > p.EpochExamples:
		return fmt.Errorf("epoch statistics %d correct of %d", p.EpochCorrect, p.EpochExamples)
	case !(p.EpochLoss >= 0) || !finite(p.EpochLoss):
		return fmt.Errorf("epoch loss %v", p.EpochLoss)
	case p.Step%spe == 0 && (p.EpochExamples != 0 || p.EpochLoss != 0):
		return errors.New("running statistics at an epoch boundary")
	case p.EpochExamples > p.Step%spe*c.Plan.DatasetSize:
		return fmt.Errorf("%d examples in %d steps of the epoch", p.EpochExamples, p.Step%spe)
	case p.RunID != "" && !isRunID(p.RunID):
		return fmt.Errorf("run id %q, want 32 hexadecimal digits", p.RunID)
	}
	for _, r := range p.Rewinds {
		c.Rewinds = append(c.Rewinds, Rewind{From: r[0], To: r[1]})
	}
	if err := checkRewinds(c.Rewinds, p.Step, c.Plan.Steps); err != nil {
		return err
	}
	c.RunID = p.RunID
	c.Step, c.Epoch = p.Step, p.Step/spe
	c.epochLoss, c.epochCorrect, c.epochExamples = p.EpochLoss, p.EpochCorrect, p.EpochExamples
	c.testLoss, c.testAccuracy = math.NaN(), math.NaN()
	if p.TestLoss != nil {
		c.testLoss = *p.TestLoss
	}
	if p.TestAccuracy != nil {
		c.testAccuracy = *p.TestAccuracy
	}
	return nil
}

func (c *Checkpoint) setPrivacy(md map[string]string) error {
	if s, ok := md[keySeed]; ok {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("seed %q", s)
		}
		c.Seed, c.Seeded = seed, true
	}
	ledger, hasLedger := md[keyLedger]
	if !c.Plan.Private {
		if hasLedger || c.Noise != "none" {
			return fmt.Errorf("a ledger or noise %q for non-private training", c.Noise)
		}
		return nil
	}
	switch {
	case !hasLedger:
		return errors.New("private training without a ledger")
	case c.Noise == "secure" && c.Seeded:
		return fmt.Errorf("secure noise in a run with seed %d", c.Seed)
	case c.Noise != "secure" && (!c.Seeded || c.Noise != fmt.Sprintf("seeded(%d)", c.Seed)):
		return fmt.Errorf("noise %q in a run with seed %v (%v)", c.Noise, c.Seed, c.Seeded)
	}
	c.Ledger = accountant.NewLedger()
	if err := c.Ledger.UnmarshalJSON([]byte(ledger)); err != nil {
		return fmt.Errorf("ledger: %v", err)
	}
	if c.Ledger.Steps() != c.LineageSteps() {
		return fmt.Errorf("ledger of %d steps at step %d (%d steps taken)", c.Ledger.Steps(), c.Step, c.LineageSteps())
	}
	for _, s := range c.Ledger.History() {
		if s.Q != c.Plan.SampleRate {
			return fmt.Errorf("ledger records q = %v, plan has q = %v", s.Q, c.Plan.SampleRate)
		}
	}
	// Every step must carry the plan's z. A rule's noise schedule (ADP-SGD) is known only
	// to a trainer: Restore checks those ledgers step by step.
	if !c.Plan.NoiseSchedule {
		if err := verifyLedger(c.Ledger, c.Plan, c.Rewinds, c.Step, nil); err != nil {
			return err
		}
	}
	return nil
}

func (c *Checkpoint) setOptimizerAndSampler(tensors map[string]checkpoint.Tensor) error {
	c.OptimizerState = map[string][]float64{}
	for name, t := range tensors {
		switch {
		case strings.HasPrefix(name, paramPrefix):
		case strings.HasPrefix(name, optimizerPrefix):
			if t.DType != checkpoint.Float64 || len(t.Shape) != 1 {
				return fmt.Errorf("optimizer state %q: %v of shape %v, want a F64 vector", name, t.DType, t.Shape)
			}
			v, err := t.Float64s()
			if err != nil {
				return fmt.Errorf("optimizer state %q: %v", name, err)
			}
			for i, x := range v {
				if !finite(x) {
					return fmt.Errorf("optimizer state %s[%d] = %v", name, i, x)
				}
			}
			c.OptimizerState[strings.TrimPrefix(name, optimizerPrefix)] = v
		case name == tensorSampler:
			if t.DType != checkpoint.Uint8 || len(t.Shape) != 1 {
				return fmt.Errorf("sampler state: %v of shape %v, want a U8 vector", t.DType, t.Shape)
			}
			c.samplerState, _ = t.Uint8s()
		case name == tensorPerm:
			if t.DType != checkpoint.Int64 || len(t.Shape) != 1 {
				return fmt.Errorf("sampler permutation: %v of shape %v, want an I64 vector", t.DType, t.Shape)
			}
			v, err := t.Int64s()
			if err != nil {
				return fmt.Errorf("sampler permutation: %v", err)
			}
			c.perm = make([]int, len(v))
			for i, x := range v {
				if x < 0 || x > math.MaxInt32 {
					return fmt.Errorf("sampler permutation entry %d", x)
				}
				c.perm[i] = int(x)
			}
		default:
			return fmt.Errorf("unknown tensor %q", name)
		}
	}
	if c.Optimizer == "" {
		return errors.New("no optimizer name")
	}
	// A private optimizer counts its steps, and its noise schedule (ADP-SGD) depends on
	// the count, which must be the ledger's and the plan's.
	if step, ok := c.OptimizerState["step"]; c.Plan.Private && (!ok || len(step) != 1 || step[0] != float64(c.Step)) {
		return fmt.Errorf("optimizer at step %v, checkpoint at step %d", step, c.Step)
	}
	switch c.sampler {
	case samplerSeeded:
		if !c.Seeded || c.samplerState == nil {
			return errors.New("a seeded sampler without a seed or state")
		}
	case samplerSecure:
		if c.Seeded || c.samplerState != nil {
			return errors.New("a secure sampler with a seed or state")
		}
	default:
		return fmt.Errorf("sampler %q", c.sampler)
	}
	midEpoch := c.Step%c.Plan.StepsPerEpoch != 0
	if c.perm != nil {
		if c.Plan.Sampling != Shuffle || !midEpoch {
			return errors.New("a sampler permutation outside a shuffled epoch")
		}
		if err := checkPerm(c.perm, c.Plan.DatasetSize); err != nil {
			return fmt.Errorf("sampler: %v", err)
		}
	} else if c.Plan.Sampling == Shuffle && midEpoch {
		return errors.New("a shuffled epoch in progress without its permutation")
	}
	return nil
}
