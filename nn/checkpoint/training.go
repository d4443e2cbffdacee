package checkpoint

import (
	"errors"
	"math"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

var (
	// ErrInvalid reports a file that is a sound privtrain checkpoint container but not a
	// valid training checkpoint: a foreign one (no training metadata), or one whose tensors
	// and metadata do not fit together. Damaged files give the container's errors
	// (ErrCorrupt, ErrTruncated, ErrChecksum, ErrNotCheckpoint) instead.
	ErrInvalid = errors.New("nn: invalid training checkpoint")
)

// Training is the complete state of a training run, as plain data: everything a
// training.Trainer needs to continue exactly where it stopped, and what its Restore
// checks before it does. The model's part (Model, DType, Layout, Params, Architecture, Loss)
// is written by nn.Model.WriteCheckpoint and read by nn.ModelFromCheckpoint; the rest by
// the trainer (Trainer.Checkpoint, Trainer.Restore).
//
// A checkpoint of a seeded run holds the seed and the exact positions of the noise and
// sampling generators, and so resumes bit for bit; anyone who holds it can also strip
// the noise from the parameters. A secure run's checkpoint holds neither generator's
// state: both get fresh secure keys on Restore (dpoptim.Noise.MarshalBinary
// explains why). The running training loss and accuracy of the epoch in progress are
// computed on raw training data and are not covered by ε: share the parameters, not the
// checkpoint.
type Training struct {
	// Model, DType and Layout describe the network (DType is tensorfile.Float32 or
	// Float64, the element type of the parameters as stored: nn.DTypeOf names the
	// model's); Params are its parameters in Layout order (stored as one named tensor per
	// entry, with its real shape).
	Model  string
	DType  tensorfile.DType
	Layout []ParamInfo
	Params []float64
	// EMA is the decay of the run's parameter average (TrainerConfig.Averaging.EMA; 0: none),
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
	// Loss is the model's training loss as nn.ParseLoss reads it ("focal:2"); empty for
	// the softmax cross-entropy, the default, and in checkpoints written before it was
	// recorded (which all trained with the cross-entropy). ModelFromCheckpoint builds
	// the model with it, so its evaluations report the loss it trained on.
	Loss string
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
	// ClassNames names the training set's classes, class 0 first (datasets.ClassNames;
	// nil when the data did not name them, and in checkpoints written before they were
	// recorded): one per class of Dataset, each as datasets.CheckClassNames accepts.
	ClassNames []string
	// Settings are the caller's TrainerConfig.Settings.
	Settings map[string]string
	// Plan is the plan the run was saved under.
	Plan Plan
	// RunID identifies the run (Trainer.RunID): random, made when the run started, kept
	// by its resumes. Rewinds are the rewinds of the run's lineage, oldest first: the
	// ledger holds LineageSteps steps, Step of them on the current branch.
	RunID   string
	Rewinds []Rewind
	// BudgetHead is the head of the data set's ledger in the budget store when the
	// checkpoint was written (the ledger after the writing run's latest entry), a witness
	// that the ledger held that entry: a resume from this checkpoint is refused when the
	// same store's ledger no longer holds it (rolled back). Nil in checkpoints written
	// before it was recorded, and by runs that record nothing.
	BudgetHead *BudgetHead

	// Sampler is SamplerSecure or SamplerSeeded, SamplerState a seeded sampler's
	// generator state (privrand's encoding; nil for a secure one), Perm the current
	// epoch's permutation of a shuffled run (mid-epoch only).
	Sampler      string
	SamplerState []byte
	Perm         []int
	// EpochLoss, EpochCorrect and EpochExamples are the running training statistics of
	// the epoch in progress (EpochLoss NaN: unknown, it was not finite when written);
	// TestLoss and TestAccuracy the last evaluation (NaN: none).
	EpochLoss     float64
	EpochCorrect  int
	EpochExamples int
	TestLoss      float64
	TestAccuracy  float64
}

// BudgetHead is a position in a budget store's ledger of a data set (budget.Head): entry
// Seq, whose hash is Hash, of the ledger whose first entry's hash is Ledger, for the data
// set whose content fingerprint is Fingerprint. All hashes are 64 lowercase hex digits.
type BudgetHead struct {
	Fingerprint string `json:"fingerprint"`
	Ledger      string `json:"ledger"`
	Seq         int    `json:"seq"`
	Hash        string `json:"hash"`
}

// Spent returns the privacy spent by the checkpoint's steps at its plan's δ (+Inf for
// non-private training).
func (c *Training) Spent() (accountant.Spent, error) {
	if c.Ledger == nil {
		return accountant.Spent{Epsilon: math.Inf(1)}, nil
	}
	return c.Ledger.Epsilon(c.Plan.Delta)
}
