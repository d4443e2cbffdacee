package training

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/internal/parallel"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

var (
	// ErrBudget reports a plan whose ε would exceed its target: a fixed noise multiplier too
	// small for the target, or a resumed run extended beyond the budget its noise was
	// calibrated for. Nothing is trained.
	ErrBudget = errors.New("training: privacy budget exceeded")
	// ErrConfig reports a training configuration that cannot run: data sets that do not
	// fit the model, a batch size outside [1, n], no epochs, a private plan without
	// clipping, δ outside (0, 1), neither a noise multiplier nor a target ε, settings
	// that contradict each other. NewTrainer returns it before anything is trained.
	ErrConfig = errors.New("training: invalid training configuration")
)

// Privacy makes a Trainer private: every logical batch's per-example gradients are clipped
// by Clip, Gaussian noise N(0, (z·Clip.Bound())²) is added to their sum, the result is
// divided by the expected batch size and handed to the rule (DP-X for rule X, package
// dpoptim), and every step is recorded in the trainer's ledger.
//
// The noise multiplier z is either given (NoiseMultiplier > 0) or calibrated so that the
// whole plan spends TargetEpsilon (NoiseMultiplier = 0). With both, the plan is refused
// if it would spend more than TargetEpsilon. Either way the plan's ε is known before the
// first step and never silently exceeds a given target.
type Privacy struct {
	// Clip bounds each example's gradient (clipping.Flat or clipping.PerLayer). Required.
	Clip clipping.Rule
	// NoiseMultiplier z > 0, or 0 to calibrate z for TargetEpsilon.
	NoiseMultiplier float64
	// TargetEpsilon is the budget at Delta (0: none; then NoiseMultiplier must be set).
	TargetEpsilon float64
	// Delta in (0, 1); choose it well below 1/n.
	Delta float64
	// Smoother, if not nil, post-processes the noisy gradient (Laplacian smoothing makes
	// DP-LSSGD and DP-LSAdam); it costs no privacy.
	Smoother dpoptim.Smoother
	// Accountant configures the ledger and the calibration (orders, conversion), or
	// chooses another accountant: accountant.WithAccountant(accountant.PLD{}). A restored
	// checkpoint's history is read by this accountant, whichever one wrote it.
	Accountant []accountant.Option
	// Adaptive, if not nil, makes the clip norm adaptive (dpoptim.AdaptiveClip, Andrew et
	// al. 2021): Clip must then be clipping.Flat, whose C is the initial clip norm; every
	// step clips to the current C_t, counts the logical batch's unclipped examples and
	// lets the private step update C_t from the noisy count. z (given or calibrated) is
	// what the ledger records, so the plan's ε is that of fixed clipping; the gradient's
	// noise multiplier is z_Δ > z. Zero fields get dpoptim's defaults (η_C = 0.2,
	// σ_b = batch/20). Not available with an ADP-SGD rule.
	Adaptive *dpoptim.AdaptiveClip
}

// TrainerConfig describes a training run for NewTrainer: the data, the update rule, the
// privacy and the schedule, which every run sets, and settings groups whose zero values
// are the defaults (no augmentation, no parameter average, no feature cache, no
// callbacks, one process).
type TrainerConfig struct {
	// Data is the training set (required), the test set and what names them in
	// checkpoints.
	Data Data
	// Rule is the update rule: dpoptim.NewSGD(lr), dpoptim.NewAdam(lr),
	// &dpoptim.HeavyBall{…}, &dpoptim.ADPPolynomial{…}, … With Privacy it runs as DP-Rule.
	Rule dpoptim.Rule
	// Privacy makes the run private; nil trains on plain mean gradients, without clipping
	// or noise, and spends ε = +Inf.
	Privacy *Privacy
	// Schedule is the batch size and number of epochs (required) and the sampling.
	Schedule Schedule
	// Seed, if not nil, seeds the sampler and the noise (dpoptim.NewSeededNoise(*Seed)) for
	// a reproducible run that resumes bit for bit. It is not private against anyone who
	// knows the seed. nil draws both with a secure key.
	Seed *uint64
	// Augmentation trains on several augmented views of every sampled example; the zero
	// value trains on the examples themselves.
	Augmentation Augmentation
	// Averaging keeps an average of the parameters (post-processing); the zero value
	// keeps none.
	Averaging Averaging
	// FeatureCache keeps a front end's features between runs; the zero value computes
	// them in every run.
	FeatureCache FeatureCache
	// Callbacks report progress; the zero value reports nothing.
	Callbacks Callbacks
	// Settings records whatever else defines the run (learning rate, schedule, model
	// options) in checkpoints; Restore refuses a checkpoint whose settings differ.
	Settings map[string]string
	// Reducer, if not nil, makes the trainer one rank of a data-parallel job
	// (distributed.go): every rank trains on the sampled examples of its shard, the ranks'
	// clipped sums are added, and rank 0 alone takes the private step, evaluates and may
	// be checkpointed. nil: one process.
	Reducer Reducer
}

// Data is a run's data: Train is required, the rest may stay zero (no test set, an empty
// name, a content fingerprint that the trainer computes when it needs it).
type Data struct {
	// Train is the training set; its examples must have the model's input shape and labels
	// below the model's number of classes.
	Train datasets.Dataset
	// Test, if not nil, is evaluated once at the end of every epoch.
	Test datasets.Dataset
	// Name names Train in checkpoints ("mnist-embedded", "cifar10"). With Train's size,
	// shape, classes and a hash of its labels it forms the fingerprint that a resumed run
	// must match.
	Name string
	// ContentFingerprint, if not empty, is datasets.ContentFingerprint(Train), computed
	// by the caller so that it is computed once per load (cmd/train also keys the
	// privacy budget store with it). It must be that of Train exactly, the set the
	// trainer samples from (after a validation split, the part kept), not of the data
	// Train was cut from; it is not checked. Empty: the trainer computes it when it
	// first writes or restores a checkpoint. Checkpoints record it and Restore refuses a
	// checkpoint whose content fingerprint differs (the same labels with other examples).
	ContentFingerprint string
}

// Schedule is how a run visits its data. BatchSize and Epochs are required; Sampling's
// zero value is Poisson.
type Schedule struct {
	// BatchSize is the expected logical batch size b, 1 ≤ b ≤ n: Poisson sampling includes
	// each example with q = b/n. Logical batches larger than the model's physical batch
	// run in chunks whose gradient sums add up before the noise is drawn.
	BatchSize int
	// Epochs ≥ 1: the plan has Epochs·⌈n/b⌉ steps.
	Epochs int
	// Sampling is Poisson (the default) or Shuffle.
	Sampling Sampling
}

// Augmentation is augmentation multiplicity (augment.go). The zero value trains on the
// examples themselves.
type Augmentation struct {
	// Multiplicity K ≥ 1 trains on K views of every sampled example drawn by Augment
	// (which must change something), loaded into K consecutive rows, the example's
	// gradient being the mean over its views before clipping; 0, the default, trains on
	// the examples themselves. The model's batch size must be a multiple of K; sampling,
	// sensitivity, noise and ε are per example and unchanged. Training loss and accuracy
	// are then means over views.
	Multiplicity int
	Augment      datasets.Augment
}

// Averaging is an average of the parameters kept beside the raw ones: post-processing of
// the released iterates, at no privacy cost. The evaluations at epoch ends, Result and
// Evaluate then use the averaged parameters, checkpoints save them, and the training
// itself goes on from the raw parameters, which the model holds. At most one of EMA and
// Iterate; the zero value keeps no average.
type Averaging struct {
	// EMA, if not 0, keeps an exponential moving average of the parameters with decay
	// β = EMA in (0, 1) (dpoptim.EMA: JAX Privacy's warm-up of the decay, the average
	// starting from the initial parameters). ModelFromCheckpoint loads the average.
	// Restore refuses a checkpoint whose EMA differs. 0: no averaging.
	EMA float64
	// Iterate, if not nil, keeps DP-LSSGD's averaged output θ̃ of the iterates
	// (dpoptim.IterateAverage: uniform for Weights nil, Theorem 3; weighted by the step
	// sizes of Weights, Theorem 2; only Weights is read, the trainer keeps its own
	// average). Its checkpoints hold θ̃ as their parameters and cannot be resumed (see
	// IterateAverageSetting). nil: none.
	Iterate *dpoptim.IterateAverage
}

// FeatureCache keeps the front end's features of the training and test sets in a
// directory, re-used by later runs whose data and front end are identical
// (CachedFrontEndFeatures; the file is named by a SHA-256 key over the front-end layers'
// settings, the shapes, the dtype and every raw example, and checked on load). The files
// hold features of the private data: protect the directory as the data. No effect for a
// model without a front end. The zero value keeps no cache.
type FeatureCache struct {
	// Dir is the cache directory ("": no cache).
	Dir string
	// Key, if not nil, keys the cache: its files end in an HMAC-SHA256 under this key
	// instead of a SHA-256, so that a file edited without the key is refused (and
	// recomputed) even if its checksum was recomputed (CachedFrontEndFeaturesWithKey).
	// cmd/train sets it to PRIVTRAIN_CHECKPOINT_KEY.
	Key []byte
}

// Callbacks report a run's progress; each one that is nil is not called.
type Callbacks struct {
	// OnStep, if set, is called after every step; OnEpoch after every epoch's
	// evaluation. A callback may call Trainer.Checkpoint. An error stops Run and is
	// returned.
	OnStep  func(StepProgress) error
	OnEpoch func(EpochMetrics) error
	// OnFrontEnd, if set, is called before and after the one-time computation of the
	// front end's features (a model whose spec starts with layers.FrontEnd layers such as
	// Scattering2D; see Model.FrontEndFeatures), which the first Run does before its
	// first step. It is not called for a model without a front end.
	OnFrontEnd func(FrontEndProgress)
}

// FrontEndProgress describes the one-time computation of a model's front-end features
// for the training and test sets.
type FrontEndProgress struct {
	FrontEnd string // the front-end layers' kinds, "scattering2d"
	Examples int    // training plus test examples
	Done     bool   // false before the computation and while it goes on, true after it
	// Computed counts the examples (training, then test) whose features are done: 0 in
	// the call before the computation, then rising in calls after each chunk of examples
	// (Done false), for a display of how far it is.
	Computed int
	Elapsed  time.Duration // the computation's wall time (when Done)
	// CacheDir is TrainerConfig.FeatureCache. Cache says, when Done and CacheDir is set,
	// where the features of the training set and then of the test set (if any) came from.
	CacheDir string
	Cache    []FeatureCacheUse
}

// StepProgress describes the step just completed, for progress displays.
//
// Its loss, like EpochMetrics' training loss and accuracy, is computed from the raw
// training examples, without clipping or noise: it is for the operator watching the run
// and is not covered by the run's ε. Publish only the test metrics and the model.
type StepProgress struct {
	Epoch         int     // 1-based epoch the step belongs to
	Step          int     // 1-based step within the epoch
	StepsPerEpoch int     //
	GlobalStep    int     // steps completed in total
	TotalSteps    int     // steps of the plan
	BatchSize     int     // examples in this step's logical batch
	Loss          float64 // mean training loss over the epoch's examples so far (NaN before any)
	// Epsilon is the ε spent so far at the plan's δ (+Inf for non-private training). With
	// an accountant other than RDP (PLD), whose every answer composes the whole history,
	// it is updated at epoch ends and at the last step; steps in between repeat the last
	// value.
	Epsilon float64
}

// EpochMetrics describes a finished epoch.
type EpochMetrics struct {
	Epoch int // 1-based
	Step  int // steps completed in total
	// TrainLoss and TrainAccuracy are over the examples the epoch's steps sampled, each
	// measured by the step that trained on it (NaN if the epoch sampled none). They are
	// not private (see StepProgress).
	TrainLoss, TrainAccuracy float64
	// TestLoss and TestAccuracy are over the test set after the epoch (NaN without one).
	TestLoss, TestAccuracy float64
	// Epsilon is the privacy spent so far at the plan's δ (+Inf for non-private training).
	Epsilon float64
	// ClipNorm is the clip norm the next step will use (Trainer.ClipNorm): with adaptive
	// clipping C_t after the epoch, otherwise the fixed bound (0 for non-private
	// training).
	ClipNorm float64
	// Seconds is the wall time since Run started.
	Seconds float64
}

// Result summarises a call of Run.
type Result struct {
	Steps  int // steps completed in total, including those before a resume
	Epochs int // epochs completed in total
	// Examples is the number of examples the steps of this Run trained on (the sum of the
	// logical batch sizes); Elapsed is this Run's wall time, evaluations included, the
	// one-time computation of a front end's features not (TrainerConfig.Callbacks.OnFrontEnd).
	Examples int
	Elapsed  time.Duration
	// TestLoss and TestAccuracy are from the last evaluation (NaN if none ran).
	TestLoss, TestAccuracy float64
	// Spent is the privacy spent so far at the plan's δ (Epsilon +Inf if not private).
	Spent accountant.Spent
}

// Trainer runs a training plan on a Model: it samples logical batches, runs them through
// the model in physical chunks, clips and sums per-example gradients (if private), takes
// one optimizer step per logical batch, evaluates after every epoch, and can save and
// restore its whole state (see Trainer.Checkpoint, Save, Load, Trainer.Restore).
//
// Training and evaluation use the model's physical batch size; padding rows are masked
// and contribute nothing. A Trainer is not safe for concurrent use.
type Trainer struct {
	model   *nn.Model
	cfg     TrainerConfig
	plan    Plan
	private *dpoptim.Private // nil for non-private training
	opt     dpoptim.Optimizer
	scaler  dpoptim.NoiseScaler
	ledger  *accountant.Ledger // nil for non-private training
	sampler *sampler
	// dataset is the training set's fingerprint, its Content filled by fingerprint()
	// from rawTrain, the training set as given, when first needed.
	dataset  checkpoint.Fingerprint
	rawTrain datasets.Dataset
	classes  []string                // the training set's class names (datasets.ClassNames; nil: unnamed)
	average  *dpoptim.EMA            // the parameter average (TrainerConfig.Averaging.EMA); nil: none
	iterate  *dpoptim.IterateAverage // the iterate average (TrainerConfig.Averaging.Iterate); nil: none
	aug      *augmenter              // nil without augmentation multiplicity
	dist     *distributed            // nil in one process (TrainerConfig.Reducer)

	step int // steps completed
	// runID identifies the run across checkpoints and resumes; rewinds are the rewinds of
	// its lineage (Restore with AllowRewind), oldest first.
	runID   string
	rewinds []checkpoint.Rewind
	// budget is the run's latest reservation in a budget store (ReserveBudget; nil:
	// none), whose ledger head the checkpoints record; resumed is what Restore loaded,
	// for the next reservation.
	budget  *BudgetRecord
	resumed *resumedFrom
	// failed is the error of a step that did not complete. The private step may already
	// have recorded its (q, z) in the ledger, so continuing would spend privacy that the
	// plan did not count: the trainer refuses to run or checkpoint after it.
	failed error
	// Running statistics of the epoch in progress.
	epochLoss     float64
	epochCorrect  int
	epochExamples int
	testLoss      float64
	testAccuracy  float64

	params, grad []float64
	x            []float32
	labels       []int
	mask         []bool
	// features says that cfg.Train and cfg.Test hold the model's precomputed front-end
	// features in place of the datasets given (prepareFrontEnd).
	features bool
}

// NewTrainer checks cfg against the model, works out the plan (sampling rate, steps,
// calibrated or checked noise, the ε of the whole plan) and returns a trainer at step 0.
func NewTrainer(m *nn.Model, cfg TrainerConfig) (*Trainer, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil model", ErrConfig)
	}
	if err := checkDatasets(m, cfg); err != nil {
		return nil, err
	}
	if cfg.Rule == nil {
		return nil, fmt.Errorf("%w: nil update rule", ErrConfig)
	}
	n := cfg.Data.Train.Len()
	if cfg.Schedule.BatchSize < 1 || cfg.Schedule.BatchSize > n {
		return nil, fmt.Errorf("%w: batch size %d for %d training examples, want 1 ≤ batch ≤ %d", ErrConfig, cfg.Schedule.BatchSize, n, n)
	}
	if cfg.Schedule.Epochs < 1 {
		return nil, fmt.Errorf("%w: %d epochs, want ≥ 1", ErrConfig, cfg.Schedule.Epochs)
	}
	if cfg.Schedule.Sampling != Poisson && cfg.Schedule.Sampling != Shuffle {
		return nil, fmt.Errorf("%w: unknown sampling %v", ErrConfig, cfg.Schedule.Sampling)
	}
	if err := checkEMA(cfg.Averaging.EMA); err != nil {
		return nil, err
	}
	cfg.Settings = maps.Clone(cfg.Settings)
	if cfg.Privacy != nil {
		// A copy, so that changing the caller's value later cannot change a running plan.
		p := *cfg.Privacy
		p.Accountant = slices.Clone(p.Accountant)
		// The rule too: the noise is scaled to its bound now, so thresholds the caller
		// changes later (a PerLayer's slice, a rule passed by pointer) must not reach the
		// clipping.
		p.Clip = clipping.Copy(p.Clip)
		if p.Adaptive != nil {
			a := *p.Adaptive
			p.Adaptive = &a
		}
		cfg.Privacy = &p
	}
	iterate, ierr := newIterateAverage(&cfg)
	if ierr != nil {
		return nil, ierr
	}
	t := &Trainer{model: m, cfg: cfg, testLoss: math.NaN(), testAccuracy: math.NaN(), runID: newRunID(), average: newAverage(cfg.Averaging.EMA), iterate: iterate}
	spe := accountant.StepsPerEpoch(n, cfg.Schedule.BatchSize)
	t.plan = Plan{
		DatasetSize:   n,
		BatchSize:     cfg.Schedule.BatchSize,
		PhysicalBatch: m.BatchSize(),
		Sampling:      cfg.Schedule.Sampling,
		SampleRate:    float64(cfg.Schedule.BatchSize) / float64(n),
		StepsPerEpoch: spe,
		Epochs:        cfg.Schedule.Epochs,
		Steps:         cfg.Schedule.Epochs * spe,
		Spent:         accountant.Spent{Epsilon: math.Inf(1)},
	}
	if cfg.Schedule.Epochs > math.MaxInt32/spe {
		return nil, fmt.Errorf("%w: %d epochs of %d steps is too many", ErrConfig, cfg.Schedule.Epochs, spe)
	}
	var err error
	if t.sampler, err = newSampler(cfg.Schedule.Sampling, n, cfg.Schedule.BatchSize, cfg.Seed); err != nil {
		return nil, err
	}
	if cfg.Privacy == nil {
		if t.opt, err = dpoptim.NewNonPrivate(cfg.Rule); err != nil {
			return nil, err
		}
	} else if err := t.setupPrivacy(); err != nil {
		return nil, err
	}
	if err := checkContentFingerprint(cfg.Data.ContentFingerprint); err != nil {
		return nil, err
	}
	t.dataset = labelFingerprint(cfg.Data.Name, cfg.Data.Train)
	t.dataset.Content, t.rawTrain = cfg.Data.ContentFingerprint, cfg.Data.Train
	t.classes = datasets.ClassNames(cfg.Data.Train)
	d, b, size := m.NumParams(), m.BatchSize(), datasets.Size(cfg.Data.Train)
	t.params, t.grad = make([]float64, d), make([]float64, d)
	t.x, t.labels, t.mask = make([]float32, b*size), make([]int, b), make([]bool, b)
	if cfg.Reducer != nil {
		if t.dist, err = newDistributed(cfg.Reducer, n, d); err != nil {
			return nil, err
		}
	}
	if err := t.setupAugment(); err != nil {
		return nil, err
	}
	return t, nil
}

func checkDatasets(m *nn.Model, cfg TrainerConfig) error {
	if cfg.Data.Train == nil {
		return fmt.Errorf("%w: no training set", ErrConfig)
	}
	if cfg.Data.Train.Len() < 1 {
		return fmt.Errorf("%w: empty training set", ErrConfig)
	}
	for _, ds := range []struct {
		name string
		ds   datasets.Dataset
	}{{"training", cfg.Data.Train}, {"test", cfg.Data.Test}} {
		if ds.ds == nil {
			continue
		}
		if !slices.Equal(ds.ds.Shape(), m.InputShape()) {
			return fmt.Errorf("%w: %s examples have shape %v, model %s expects %v", ErrConfig, ds.name, ds.ds.Shape(), m.Name(), m.InputShape())
		}
		if ds.ds.NumClasses() > m.NumClasses() {
			return fmt.Errorf("%w: %s set has %d classes, model %s has %d outputs", ErrConfig, ds.name, ds.ds.NumClasses(), m.Name(), m.NumClasses())
		}
	}
	return nil
}

// setupPrivacy checks the privacy configuration, calibrates or checks the noise and
// builds the private step.
func (t *Trainer) setupPrivacy() error {
	p := t.cfg.Privacy
	if p.Clip == nil {
		return fmt.Errorf("%w: private training needs a clipping rule", ErrConfig)
	}
	if err := clipping.Fits(p.Clip, len(t.model.ParamLayers())); err != nil {
		return fmt.Errorf("%w: %w (model %s: %v)", ErrConfig, err, t.model.Name(), t.model.ParamLayers())
	}
	bound := p.Clip.Bound()
	if !(bound > 0) || math.IsInf(bound, 0) {
		return fmt.Errorf("%w: clipping bound %v, want a finite bound > 0", ErrConfig, bound)
	}
	if err := t.checkAdaptive(); err != nil {
		return err
	}
	if !(p.Delta > 0 && p.Delta < 1) {
		return fmt.Errorf("%w: δ = %v, want δ in (0, 1)", ErrConfig, p.Delta)
	}
	if dpoptim.CheckNoiseMultiplier(p.NoiseMultiplier) != nil {
		return fmt.Errorf("%w: noise multiplier %v, want a finite z > 0 (or 0 to calibrate for a target ε)", ErrConfig, p.NoiseMultiplier)
	}
	if !(p.TargetEpsilon >= 0) || math.IsInf(p.TargetEpsilon, 0) {
		return fmt.Errorf("%w: target ε = %v, want a finite ε > 0", ErrConfig, p.TargetEpsilon)
	}
	if p.NoiseMultiplier == 0 && p.TargetEpsilon == 0 {
		return fmt.Errorf("%w: private training needs a noise multiplier or a target ε", ErrConfig)
	}
	t.scaler, _ = t.cfg.Rule.(dpoptim.NoiseScaler)
	t.plan.NoiseSchedule = t.scaler != nil
	t.ledger = accountant.NewLedger(p.Accountant...)
	t.plan.Private = true
	t.plan.Clip, t.plan.ClipRule = bound, describeClip(p.Clip)
	if p.Adaptive != nil {
		t.plan.ClipRule = describeAdaptive(bound, *p.Adaptive)
	}
	t.plan.Delta, t.plan.TargetEpsilon = p.Delta, p.TargetEpsilon
	q, steps := t.plan.SampleRate, t.plan.Steps
	z := p.NoiseMultiplier
	var spent accountant.Spent
	var err error
	if z == 0 {
		if z, spent, err = calibrate(p.Accountant, q, t.scaler, steps, p.TargetEpsilon, p.Delta); err != nil {
			return fmt.Errorf("training: calibrating the noise for ε = %v at δ = %v over %d steps at q = %.4g: %w", p.TargetEpsilon, p.Delta, steps, q, err)
		}
		t.plan.Calibrated = true
	} else if spent, err = planSpent(nil, p.Accountant, q, z, t.scaler, 0, steps, p.Delta); err != nil {
		return fmt.Errorf("training: privacy of the plan: %w", err)
	}
	if p.TargetEpsilon > 0 && spent.Epsilon > p.TargetEpsilon {
		return fmt.Errorf("%w: %d steps at q = %.4g with noise multiplier %v spend ε = %.4g at δ = %v, above the target ε = %v", ErrBudget, steps, q, z, spent.Epsilon, p.Delta, p.TargetEpsilon)
	}
	t.plan.NoiseMultiplier, t.plan.Spent = z, spent
	var noise *dpoptim.Noise
	if t.cfg.Seed != nil {
		noise = dpoptim.NewSeededNoise(*t.cfg.Seed)
	}
	err = t.newPrivate(z, noise)
	if err != nil && p.Adaptive != nil { // NewPrivate computes z_Δ (the one place): σ_b ≤ z/2 fails there
		return fmt.Errorf("%w: %w (expected batch %d)", ErrConfig, err, t.plan.BatchSize)
	}
	return err
}

// newPrivate builds the private step with noise multiplier z and makes it the optimizer.
func (t *Trainer) newPrivate(z float64, noise *dpoptim.Noise) error {
	p, err := t.buildPrivate(z, noise)
	if err != nil {
		return err
	}
	t.private, t.opt = p, p
	return nil
}

// buildPrivate returns a private step around the trainer's rule with noise multiplier z
// and noise source noise (nil: secure).
func (t *Trainer) buildPrivate(z float64, noise *dpoptim.Noise) (*dpoptim.Private, error) {
	p := t.cfg.Privacy
	return dpoptim.NewPrivate(t.cfg.Rule, dpoptim.PrivateConfig{
		NoiseMultiplier: z,
		ClipNorm:        p.Clip.Bound(),
		SampleRate:      t.plan.SampleRate,
		DatasetSize:     t.plan.DatasetSize,
		Recorder:        t.ledger,
		Smoother:        p.Smoother,
		Noise:           noise,
		Adaptive:        p.Adaptive,
	})
}

// describeClip names a clipping rule for plans and checkpoints: the rule's own String
// ("flat C=1", "per-layer C=[…]").
func describeClip(r clipping.Rule) string { return fmt.Sprint(r) }

// Plan returns the run's plan.
func (t *Trainer) Plan() Plan { return t.plan }

// Model returns the model being trained.
func (t *Trainer) Model() *nn.Model { return t.model }

// Optimizer returns the optimizer: a *dpoptim.Private for private training (its Name is
// "DP-SGD", "DP-LSAdam", …), a *dpoptim.NonPrivate otherwise.
func (t *Trainer) Optimizer() dpoptim.Optimizer { return t.opt }

// Ledger returns the privacy ledger every private step is recorded in (nil for non-private
// training). Use it read-only.
func (t *Trainer) Ledger() *accountant.Ledger { return t.ledger }

// Noise describes the noise source: "secure", "seeded(<seed>)", or "none" for non-private
// training.
func (t *Trainer) Noise() string {
	if t.private == nil {
		return "none"
	}
	return t.private.Noise().String()
}

// Seed returns the run's seed and true for a seeded run (TrainerConfig.Seed), and false
// for one whose sampler and noise come from a secure key: the typed form of what Noise
// describes.
func (t *Trainer) Seed() (uint64, bool) {
	if t.cfg.Seed == nil {
		return 0, false
	}
	return *t.cfg.Seed, true
}

// Steps returns the number of steps completed, including those before a resume.
func (t *Trainer) Steps() int { return t.step }

// Spent returns the privacy spent so far at the plan's δ; Epsilon is +Inf for non-private
// training.
func (t *Trainer) Spent() (accountant.Spent, error) {
	if t.ledger == nil || !t.leader() { // other ranks record nothing (distributed.go)
		return accountant.Spent{Epsilon: math.Inf(1)}, nil
	}
	return t.ledger.Epsilon(t.plan.Delta)
}

// Run trains from the current step to the end of the plan. Cancelling ctx stops it after
// the step in progress; the error then wraps ctx.Err() and the trainer is at a step
// boundary, ready for Checkpoint. Run may be called again to continue. A step that fails
// (e.g. parameters overflowing) ends the trainer for good: its ledger may already hold that
// step, so restart from the last checkpoint instead.
func (t *Trainer) Run(ctx context.Context) (Result, error) {
	// A model's front end runs once, before the first step and outside Elapsed.
	if t.failed == nil && t.step < t.plan.Steps {
		if err := t.prepareFrontEnd(ctx); err != nil {
			return t.result(Result{}, time.Now()), err
		}
	}
	start := time.Now()
	res := Result{}
	if t.failed != nil {
		return res, fmt.Errorf("training: the trainer stopped at a failed step (%w); restart from a checkpoint", t.failed)
	}
	spe := t.plan.StepsPerEpoch
	// The RDP ledger answers ε in one pass over its orders, so every step reports its own.
	// Other accountants (PLD) compose the whole history per query (tens of milliseconds,
	// seconds for an ADP-SGD schedule), so they are asked at epoch ends and at the end of
	// the run; the steps in between report the ε of the last answer.
	everyStep := true
	if t.ledger != nil {
		_, everyStep = t.ledger.Accountant().(accountant.RDP)
	}
	spent, err := t.Spent()
	if err != nil {
		return res, err
	}
	if err := t.startAverage(); err != nil {
		return res, err
	}
	if t.dist != nil {
		if err := t.syncRanks(); err != nil {
			return res, err
		}
	}
	for t.step < t.plan.Steps {
		if err := ctx.Err(); err != nil {
			return t.result(res, start), fmt.Errorf("training: training stopped after step %d of %d: %w", t.step, t.plan.Steps, err)
		}
		k := t.step % spe
		size, err := t.trainStep(k)
		if err == nil {
			err = t.updateAverage()
		}
		if err != nil {
			t.failed = fmt.Errorf("training: step %d: %w", t.step+1, err)
			return t.result(res, start), t.failed
		}
		res.Examples += size
		t.step++
		if everyStep || k == spe-1 || t.step == t.plan.Steps {
			if spent, err = t.Spent(); err != nil {
				return t.result(res, start), err
			}
		}
		progress := StepProgress{
			Epoch: (t.step-1)/spe + 1, Step: k + 1, StepsPerEpoch: spe,
			GlobalStep: t.step, TotalSteps: t.plan.Steps, BatchSize: size,
			Loss: ratio(t.epochLoss, t.epochExamples), Epsilon: spent.Epsilon,
		}
		var metrics *EpochMetrics
		if k == spe-1 {
			// Finish the epoch before any callback, so that a checkpoint taken in one sees
			// a clean epoch boundary.
			if metrics, err = t.endEpoch(spent.Epsilon, start); err != nil {
				return t.result(res, start), err
			}
		}
		if t.cfg.Callbacks.OnStep != nil {
			if err := t.cfg.Callbacks.OnStep(progress); err != nil {
				return t.result(res, start), err
			}
		}
		if metrics != nil && t.cfg.Callbacks.OnEpoch != nil {
			if err := t.cfg.Callbacks.OnEpoch(*metrics); err != nil {
				return t.result(res, start), err
			}
		}
	}
	return t.result(res, start), nil
}

func (t *Trainer) result(res Result, start time.Time) Result {
	res.Steps = t.step
	res.Epochs = t.step / t.plan.StepsPerEpoch
	res.Elapsed = time.Since(start)
	res.TestLoss, res.TestAccuracy = t.testLoss, t.testAccuracy
	res.Spent, _ = t.Spent()
	return res
}

func ratio(a float64, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / float64(b)
}

// endEpoch evaluates the test set, resets the epoch's running statistics and returns the
// epoch's metrics.
func (t *Trainer) endEpoch(eps float64, start time.Time) (*EpochMetrics, error) {
	m := &EpochMetrics{
		Epoch:         t.step / t.plan.StepsPerEpoch,
		Step:          t.step,
		TrainLoss:     ratio(t.epochLoss, t.epochExamples),
		TrainAccuracy: ratio(float64(t.epochCorrect), t.epochExamples),
		TestLoss:      math.NaN(),
		TestAccuracy:  math.NaN(),
		Epsilon:       eps,
		ClipNorm:      t.ClipNorm(),
	}
	if t.cfg.Data.Test != nil && t.leader() {
		loss, acc, err := t.Evaluate(t.cfg.Data.Test)
		if err != nil {
			return nil, err
		}
		m.TestLoss, m.TestAccuracy = loss, acc
		t.testLoss, t.testAccuracy = loss, acc
	}
	t.epochLoss, t.epochCorrect, t.epochExamples = 0, 0, 0
	t.sampler.endEpoch()
	m.Seconds = time.Since(start).Seconds()
	return m, nil
}

// trainStep runs step k of the current epoch and returns its logical batch size.
func (t *Trainer) trainStep(k int) (int, error) {
	idx := t.sampler.next(k)
	mine := t.shard(idx) // idx in one process
	clear(t.grad)
	b := t.model.BatchSize() / t.views()
	var loss float64
	correct, unclipped := 0, 0
	for lo := 0; lo < len(mine); lo += b {
		chunk := mine[lo:min(lo+b, len(mine))]
		batch := t.loadTrain(chunk)
		var st nn.StepStats
		var err error
		if t.private != nil {
			st, err = t.model.ClippedGradient(batch, t.clipRule(), t.grad)
			// Examples, not rows: with augmentation multiplicity a row is one view, and
			// the count's sensitivity of one is per example.
			unclipped += len(chunk) - st.Clipped
		} else {
			st, err = t.model.Gradient(batch, t.grad)
		}
		if err != nil {
			return 0, err
		}
		loss += st.Loss
		correct += st.Correct
	}
	if t.dist != nil {
		var err error
		if loss, correct, unclipped, err = t.reduce(idx, loss, correct, unclipped); err != nil {
			return 0, err
		}
	}
	// An empty Poisson batch still takes a private step: noise alone, recorded like any
	// other, as the accountant's analysis of Poisson sampling assumes.
	t.model.Params(t.params)
	if err := t.update(len(idx), unclipped); err != nil {
		return 0, err
	}
	if err := t.model.SetParams(t.params); err != nil {
		return 0, err
	}
	t.epochLoss += loss
	t.epochCorrect += correct
	t.epochExamples += len(idx) * t.views()
	return len(idx), nil
}

// load fills the physical batch with the examples idx (at most BatchSize of them) and
// masks the rest. Large batches load on all cores (Example is safe for concurrent use):
// the model's workers would otherwise wait for one goroutine copying (or decoding) rows.
func (t *Trainer) load(ds datasets.Dataset, idx []int) nn.Batch {
	size := datasets.Size(ds)
	rows := func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			if r < len(idx) {
				t.labels[r] = ds.Example(idx[r], t.x[r*size:(r+1)*size])
				t.mask[r] = true
			} else {
				t.mask[r] = false
			}
		}
	}
	// About 16k values (tens of µs) a range: below that, a goroutine costs more than it saves.
	const perWorker = 1 << 14
	if workers := runtime.GOMAXPROCS(0); workers > 1 && len(idx)*size >= 2*perWorker {
		parallel.For(workers, len(t.labels), max(1, perWorker/size), rows)
	} else {
		rows(0, 0, len(t.labels))
	}
	return nn.Batch{X: t.x[:len(t.labels)*size], Labels: t.labels, Mask: t.mask, Features: nn.IsFeatures(ds)}
}

// Evaluate returns the mean loss and the accuracy of the model on ds, run in physical
// batches through the forward-only graph: with the averaged parameters when the run keeps
// an average (TrainerConfig.Averaging.EMA; the model holds the raw ones again afterwards), with the
// model's parameters otherwise.
func (t *Trainer) Evaluate(ds datasets.Dataset) (loss, accuracy float64, err error) {
	restore, err := t.withAverage()
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	defer func() {
		if rerr := restore(); rerr != nil && err == nil {
			loss, accuracy, err = math.NaN(), math.NaN(), rerr
		}
	}()
	if ds == nil || ds.Len() == 0 {
		return math.NaN(), math.NaN(), fmt.Errorf("%w: empty evaluation set", ErrConfig)
	}
	if !nn.IsFeatures(ds) && !slices.Equal(ds.Shape(), t.model.InputShape()) {
		return math.NaN(), math.NaN(), fmt.Errorf("%w: evaluation examples have shape %v, model expects %v", ErrConfig, ds.Shape(), t.model.InputShape())
	}
	b := t.model.BatchSize()
	idx := make([]int, 0, b)
	var sum float64
	correct := 0
	for lo := 0; lo < ds.Len(); lo += b {
		idx = idx[:0]
		for i := lo; i < min(lo+b, ds.Len()); i++ {
			idx = append(idx, i)
		}
		l, c, err := t.model.Evaluate(t.load(ds, idx))
		if err != nil {
			return math.NaN(), math.NaN(), err
		}
		sum += l
		correct += c
	}
	n := float64(ds.Len())
	return sum / n, float64(correct) / n, nil
}

// prepareFrontEnd computes the front-end features of the training and test sets, once, for
// a model with a front end (Model.FrontEndFeatures), and makes them the datasets the steps
// and the evaluations read. Cancelling ctx stops it between chunks of examples, with an
// error wrapping ctx.Err(); nothing has been trained then, and Run may be called again.
func (t *Trainer) prepareFrontEnd(ctx context.Context) error {
	if !t.model.HasFrontEnd() || t.features {
		return nil
	}
	start := time.Now()
	p := FrontEndProgress{FrontEnd: t.model.FrontEnd(), Examples: t.cfg.Data.Train.Len(), CacheDir: t.cfg.FeatureCache.Dir}
	if t.cfg.Data.Test != nil {
		p.Examples += t.cfg.Data.Test.Len()
	}
	if t.cfg.Callbacks.OnFrontEnd != nil {
		t.cfg.Callbacks.OnFrontEnd(p)
	}
	offset := 0 // the examples of the sets done before
	features := func(ds datasets.Dataset, set string) (datasets.Dataset, error) {
		ctx := ctx
		if t.cfg.Callbacks.OnFrontEnd != nil {
			ctx = datasets.WithProgress(ctx, func(done, _ int) {
				q := p
				q.Computed = offset + done
				t.cfg.Callbacks.OnFrontEnd(q)
			})
		}
		defer func() { offset += ds.Len() }()
		if t.cfg.FeatureCache.Dir == "" {
			return t.model.FrontEndFeaturesContext(ctx, ds)
		}
		fs, use, err := cachedFrontEndFeatures(ctx, t.model, ds, t.cfg.FeatureCache.Dir, t.cfg.FeatureCache.Key)
		use.Set = set
		p.Cache = append(p.Cache, use)
		return fs, err
	}
	train, err := features(t.cfg.Data.Train, "training")
	if err != nil {
		return fmt.Errorf("training: training set: %w", err)
	}
	test := t.cfg.Data.Test
	if test != nil {
		if test, err = features(test, "test"); err != nil {
			return fmt.Errorf("training: test set: %w", err)
		}
	}
	t.cfg.Data.Train, t.cfg.Data.Test = train, test
	if n := len(t.labels) * datasets.Size(train); n > len(t.x) {
		t.x = make([]float32, n)
	}
	t.features = true
	if t.cfg.Callbacks.OnFrontEnd != nil {
		p.Done, p.Elapsed = true, time.Since(start)
		t.cfg.Callbacks.OnFrontEnd(p)
	}
	return nil
}
