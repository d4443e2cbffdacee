// Package training runs a private training plan on an nn.Model: the Trainer, its Plan
// (fixed before the first step with the ε the run will spend; Plan and Sampling are
// aliases of the types a checkpoint stores, vocabulary.go),
// the sampler, adaptive clipping and parameter averaging glue, augmentation multiplicity,
// the front-end feature cache (CachedFrontEndFeatures, featurecache.go),
// and the trainer's side of a checkpoint (Trainer.Checkpoint captures, Trainer.Restore
// checks and loads: optimizer state, ledger, sampler, lineage). The model's side of a
// checkpoint is package nn's, the data type package checkpoint's, its file format package
// tensorfile's.
//
// Training. A Trainer runs a whole private plan on a Model: Poisson sampling (each example
// joins a step with probability q = BatchSize/n; shuffled fixed batches on request),
// logical batches split into physical chunks whose clipped sums add up before the single
// noise draw, one test-set evaluation per epoch, and progress callbacks. It knows the
// plan's ε before the first step (calibrating the noise for a target ε, or reporting the ε
// of a given noise multiplier) and never exceeds a target. Trainer.Checkpoint,
// checkpoint.Save, checkpoint.Load and Trainer.Restore keep parameters, optimizer state,
// the accountant's ledger and, for a seeded run, the generators, so a resumed run
// continues the same privacy history; see ExampleTrainer. With TrainerConfig.Averaging.EMA the
// trainer also keeps an exponential moving average of the parameters (dpoptim.EMA,
// post-processing): evaluations use it, the training goes on from the raw parameters,
// checkpoints store it (ema/ tensors) and models built from a checkpoint load it
// (checkpoint.Training.ModelParams). Load and Restore check the ledger step by step
// against the plan the checkpoint states (checkpoint.ErrInvalid), and a trainer that has
// taken steps does not go back to an earlier state of its run without AllowRewind, which
// keeps the discarded steps in the ledger (ErrRewind). checkpoint.SaveWithKey and
// checkpoint.LoadWithKey add and check an HMAC-SHA256 under a key the user holds.
//
// Augmentation multiplicity. With TrainerConfig.Augmentation.Multiplicity K, the Trainer loads K
// views of every sampled example (datasets.Augment, drawn from the seed, the step, the
// example and the view) into K consecutive rows, and Model.SetGroupSize(K) makes the
// clipping treat each group of rows as one example whose gradient is the mean over its
// views, clipped as a whole (augment.go): the sampling rate, sensitivity, noise and ledger
// are per example and unchanged. The setting is recorded under SettingAugment, so a
// checkpoint refuses a changed K. Training loss and accuracy are per view.
package training
