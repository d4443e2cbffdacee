// Package privrand owns the randomness that privacy rests on: the generators, the
// Gaussian and Laplace noise of private mechanisms and the batch samplers whose secrecy
// privacy amplification by subsampling assumes. It is the only package that builds a
// ChaCha8 generator or reads the operating system's secure generator (crypto/rand): nn,
// dpoptim, erm, audit and datasets draw from its named streams (erm/data's synthetic data
// set too), and random identifiers ([ID]) come from it.
//
// # Generator
//
// A [Source] is a ChaCha8 generator (math/rand/v2). It is privacy-critical because
// the (ε, δ) guarantee holds only against an adversary who cannot predict the noise or the
// batches; ChaCha8 is a cryptographic stream cipher, so its output cannot be predicted
// from earlier output. A Source is either
//
//   - secure ([NewSecure]): keyed with 32 bytes from crypto/rand. Its state is never
//     serialised: [Source.MarshalBinary] writes only that it is secure and
//     [Source.UnmarshalBinary] reseeds from crypto/rand, because whoever read a checkpoint
//     could otherwise predict the noise and batches still to come; or
//   - seeded ([NewSeeded]): keyed from a uint64 seed, for reproducible experiments only.
//     Anyone who knows the seed can recompute the noise and subtract it: a seeded run is
//     not private against them. Its exact position is serialised, so a restored run
//     continues bit for bit.
//
// [Source.Seed] reports the mode as a value (seed, true) or (0, false); nothing needs to
// parse [Source.String].
//
// # Streams
//
// One seed drives several independent streams (the noise of a run and its batches must
// not be correlated). Stream s of seed x is the ChaCha8 generator keyed with
//
//	SHA-256("privtrain/privrand v1" ‖ 0x00 ‖ name(s) ‖ 0x00 ‖ little-endian uint64(x))
//
// where name(s) is [Stream.String] ("noise", "sampler", "erm"). Distinct (stream, seed)
// pairs give unrelated keys (SHA-256 is collision resistant), and ChaCha8 streams under
// unrelated keys are computationally independent. A secure Source of any stream has its
// own crypto/rand key.
//
// Four streams keep the key derivation their consumers used before privrand owned them,
// so that seeded runs, and the checkpoints that resume them, reproduce bit for bit:
//
//   - [AuditCoins], audit's canary coins: SHA-256("privtrain audit coins" ‖ 0x00 ‖ le64(x));
//   - [Augmentation], the 64-bit key of augmentation's views ([Key64]; [NewKey64] for a
//     secure run): the first 8 bytes, little-endian, of
//     SHA-256("privtrain/augment v1" ‖ 0x00 ‖ le64(x));
//   - [ValidationSplit], the permutation of a held-out split: le64(x) in the first 8
//     bytes of the key, the rest zero (not secret: the split need only be reproducible);
//   - [SyntheticData], erm/data's synthetic data set: le64(x) ‖ le64(0x9e3779b97f4a7c15)
//     ‖ 16 zero bytes.
//
// A new consumer adds a Stream constant with a new name (never reusing a name or a value:
// both are in keys and checkpoints) and takes the v1 derivation.
//
// # Noise
//
// [AddGaussian] adds N(0, std²) to every entry of a slice, [AddGaussianAt] to the entries
// of an index list, [AddLaplace] Laplace(b) (scale b, variance 2b²). Each draws from the
// generator in index order (Gaussian: one NormFloat64 per entry; Laplace: the difference
// of two ExpFloat64), so a seeded run's noise is a fixed function of its seed, and a scale
// of 0 draws nothing. dpoptim's private steps and erm's solvers add their noise through
// them and in no other way.
//
// # Samplers
//
// [Poisson] includes each of n examples independently with probability q in every step,
// the sampling the accountants' subsampled-Gaussian analysis assumes. It skips from one
// included index to the next by geometric gaps, so a step costs O(q·n) draws, not O(n).
// [Shuffle] cuts a fresh uniform permutation per epoch into consecutive fixed-size
// batches; [Subset] draws m distinct indices uniformly (a partial Fisher–Yates shuffle).
// The samplers take the *rand.Rand of a Source ([Source.Rand]) so that one Source can feed
// both sampling and noise where an API hands a single generator around (erm's Solve).
package privrand
