// Package checkpoint is the training checkpoint: Training, the plain data of a run's
// state (the model's part that package nn writes and reads, the trainer's part that
// package training captures and restores: optimizer state, ledger, sampler state,
// lineage, Plan, Architecture, ParamInfo, the data Fingerprint), laid out by the codec
// (codec.go, schema in its comment) as the tensors and metadata of a tensorfile.File,
// with everything checked that can be checked without a trainer, and written and read by
// Save and Load (SaveWithKey and LoadWithKey with an HMAC). The container itself (the
// file format privtrain-checkpoint/1 and /2: zstd frames, checksums, the MACs,
// safetensors inside) is package nn/tensorfile's, which knows nothing of training. This
// package imports neither nn nor training: both import it.
//
// Save a run's state atomically and read it back, checked:
//
//	err := checkpoint.Save("run.ckpt", c) // c from training.Trainer.Checkpoint
//	...
//	c, err := checkpoint.Load("run.ckpt")
//
// Load fails with an error matching ErrInvalid for a sound container that is not a valid
// training checkpoint, and with the container's errors (ErrNotCheckpoint,
// ErrUnsupportedVersion, ErrCorrupt, ErrTruncated, ErrChecksum, ErrTooLarge) for a file
// that is not a sound one; LoadWithKey adds ErrAuthentication.
package checkpoint
