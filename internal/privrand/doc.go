// Package privrand owns the randomness that privacy rests on: the generator behind the
// Gaussian noise of private steps and the batch samplers whose secrecy privacy
// amplification by subsampling assumes. nn, dpoptim and erm draw from it and from nothing
// else.
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
