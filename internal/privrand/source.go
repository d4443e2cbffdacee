package privrand

import (
	crand "crypto/rand"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Stream names one of the independent streams that a seed drives (see the package doc
// for the key derivation).
type Stream uint8

const (
	// Noise is the Gaussian noise of dpoptim's private steps (the gradient's and, with
	// adaptive clipping, the unclipped count's).
	Noise Stream = 1 + iota
	// Sampler is nn's batch sampling.
	Sampler
	// ERM is erm's solvers, which take noise and batches from one *rand.Rand.
	ERM
	// AuditCoins is audit's canary coins and labels (which canaries are members). Legacy
	// key: SHA-256("privtrain audit coins" ‖ 0x00 ‖ little-endian uint64(seed)).
	AuditCoins
	// Augmentation is the 64-bit key of augmentation's views ([Key64]), from which
	// datasets draws each view by a PCG generator. Legacy key: SHA-256("privtrain/augment
	// v1" ‖ 0x00 ‖ little-endian uint64(seed)).
	Augmentation
	// ValidationSplit is the permutation that picks a held-out validation set. Legacy key:
	// the little-endian seed in the first 8 bytes, the other 24 zero (the split is not
	// secret: it only has to be reproducible).
	ValidationSplit
	// SyntheticData is erm/data's synthetic data set (data, not noise). Legacy key: the
	// little-endian seed in bytes 0–7, the little-endian 0x9e3779b97f4a7c15 in bytes 8–15,
	// the rest zero.
	SyntheticData
	// Tuning is a private hyperparameter search's own draws (cmd/train -tune): the number
	// of trials, each trial's values and seed, and the noise on each trial's score.
	Tuning
)

// String returns the stream's name, which enters its key derivation (but for the legacy
// streams' own derivations).
func (s Stream) String() string {
	switch s {
	case Noise:
		return "noise"
	case Sampler:
		return "sampler"
	case ERM:
		return "erm"
	case AuditCoins:
		return "audit-coins"
	case Augmentation:
		return "augmentation"
	case ValidationSplit:
		return "validation-split"
	case SyntheticData:
		return "synthetic-data"
	case Tuning:
		return "tuning"
	}
	return "stream(" + strconv.Itoa(int(s)) + ")"
}

func (s Stream) valid() bool { return s >= Noise && s <= Tuning }

// SecureOrigin names the operating system's secure generator that keys a secure
// [Source], as reports and flag help print it ("(default: crypto/rand)").
const SecureOrigin = "crypto/rand"

// ErrState is wrapped by every error of [Source.UnmarshalBinary]: the input is not a
// Source's encoding.
var ErrState = errors.New("privrand: malformed generator state")

// Source is a ChaCha8 generator, secure or seeded (see the package doc). The zero Source
// draws nothing: build one with [NewSecure] or [NewSeeded], or restore one with
// [Source.UnmarshalBinary]. It is not safe for concurrent use.
type Source struct {
	src    *rand.ChaCha8
	rng    *rand.Rand
	seeded bool
	seed   uint64
	stream Stream
	// pre is a pending PrefetchGaussian (prefetch.go); taken counts the prefetches used
	// (for tests).
	pre   *prefetch
	taken int
}

var (
	_ rand.Source                = (*Source)(nil)
	_ encoding.BinaryMarshaler   = (*Source)(nil)
	_ encoding.BinaryAppender    = (*Source)(nil)
	_ encoding.BinaryUnmarshaler = (*Source)(nil)
)

// NewSecure returns a Source of stream s keyed with 32 bytes from crypto/rand.
func NewSecure(s Stream) (*Source, error) {
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("privrand: seeding the %v generator from crypto/rand: %w", s, err)
	}
	return newSource(key, false, 0, s), nil
}

// NewSeeded returns stream s of seed: the same (seed, s) always gives the same draws.
// For reproducible experiments only: it is not private against anyone who knows seed.
func NewSeeded(seed uint64, s Stream) *Source {
	return newSource(Key(seed, s), true, seed, s)
}

// Key returns the ChaCha8 key of stream s of seed, as the package doc derives it: the v1
// derivation, or a legacy stream's own (see its constant).
func Key(seed uint64, s Stream) [32]byte {
	switch s {
	case AuditCoins:
		return sha256.Sum256(binary.LittleEndian.AppendUint64([]byte("privtrain audit coins\x00"), seed))
	case Augmentation:
		return sha256.Sum256(binary.LittleEndian.AppendUint64([]byte("privtrain/augment v1\x00"), seed))
	case ValidationSplit:
		var key [32]byte
		binary.LittleEndian.PutUint64(key[:], seed)
		return key
	case SyntheticData:
		var key [32]byte
		binary.LittleEndian.PutUint64(key[:], seed)
		binary.LittleEndian.PutUint64(key[8:], 0x9e3779b97f4a7c15)
		return key
	}
	const label = "privtrain/privrand v1\x00"
	name := s.String()
	b := make([]byte, 0, len(label)+len(name)+1+8)
	b = append(b, label...)
	b = append(b, name...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint64(b, seed)
	return sha256.Sum256(b)
}

// Key64 returns the 64-bit key of stream s of seed, for a consumer that seeds its own
// small generators from one uint64 (the [Augmentation] stream): the first 8 bytes of
// [Key] read little-endian.
func Key64(seed uint64, s Stream) uint64 {
	k := Key(seed, s)
	return binary.LittleEndian.Uint64(k[:8])
}

// NewKey64 returns a 64-bit key from the operating system's secure generator: the
// secure counterpart of [Key64].
func NewKey64() uint64 {
	var b [8]byte
	crand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return binary.LittleEndian.Uint64(b[:])
}

// ID returns n bytes from the operating system's secure generator in hex (2n
// characters), for identifiers that must not repeat across processes and runs (a run's
// id, a temporary file's token). It is not privacy noise. n ≤ 0 gives "".
func ID(n int) string {
	b := make([]byte, max(n, 0))
	crand.Read(b) // never fails: crypto/rand crashes the program instead
	return hex.EncodeToString(b)
}

func newSource(key [32]byte, seeded bool, seed uint64, s Stream) *Source {
	src := rand.NewChaCha8(key)
	return &Source{src: src, rng: rand.New(src), seeded: seeded, seed: seed, stream: s}
}

// Seed returns the seed and true for a seeded Source, and 0 and false for a secure one.
func (s *Source) Seed() (uint64, bool) { return s.seed, s.seeded }

// Stream returns the stream the Source was created for.
func (s *Source) Stream() Stream { return s.stream }

// String returns "secure" or "seeded(<seed>)", for logs and reports.
func (s *Source) String() string {
	if s.seeded {
		return "seeded(" + strconv.FormatUint(s.seed, 10) + ")"
	}
	return "secure"
}

// Uint64 returns 64 uniformly random bits, making a Source a rand.Source.
func (s *Source) Uint64() uint64 { return s.src.Uint64() }

// Rand returns the *rand.Rand that draws from s; it shares s's state.
func (s *Source) Rand() *rand.Rand { return s.rng }

// Normal returns one standard normal draw: math/rand/v2's ziggurat NormFloat64.
func (s *Source) Normal() float64 { return s.rng.NormFloat64() }

// Float64 returns a uniform draw from [0, 1), a multiple of 2⁻⁵³.
func (s *Source) Float64() float64 { return s.rng.Float64() }

// The encoding: magic, version, mode; a seeded Source continues with its stream, its
// seed (little-endian) and the ChaCha8 state (math/rand/v2's own encoding).
const (
	// Magic starts every encoding.
	Magic = "privrand"
	// Version follows Magic; it changes with the layout.
	Version     = 1
	modeSecure  = 0
	modeSeeded  = 1
	headerBytes = len(Magic) + 2
)

// MarshalBinary encodes s for a checkpoint: a seeded Source its stream, seed and exact
// position; a secure one only that it is secure (see the package doc for why).
func (s *Source) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, headerBytes+1+8+64))
}

// AppendBinary appends the encoding of MarshalBinary to b.
func (s *Source) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, Magic...)
	b = append(b, Version)
	if !s.seeded {
		return append(b, modeSecure), nil
	}
	b = append(b, modeSeeded, byte(s.stream))
	b = binary.LittleEndian.AppendUint64(b, s.seed)
	return s.src.AppendBinary(b)
}

// UnmarshalBinary restores a Source encoded by MarshalBinary: a seeded one to the exact
// position it was saved at, a secure one freshly keyed from crypto/rand (keeping s's
// stream). Malformed input gives an error wrapping [ErrState] and leaves s unchanged.
func (s *Source) UnmarshalBinary(data []byte) error {
	s.dropPrefetch() // its goroutine writes the caller's buffer: let it finish first
	if len(data) < headerBytes || string(data[:len(Magic)]) != Magic {
		return fmt.Errorf("%w: missing %q header", ErrState, Magic)
	}
	if v := data[len(Magic)]; v != Version {
		return fmt.Errorf("%w: unknown version %d", ErrState, v)
	}
	mode, rest := data[len(Magic)+1], data[headerBytes:]
	switch mode {
	case modeSecure:
		if len(rest) != 0 {
			return fmt.Errorf("%w: %d trailing bytes after a secure header", ErrState, len(rest))
		}
		fresh, err := NewSecure(s.stream)
		if err != nil {
			return err
		}
		*s = *fresh
		return nil
	case modeSeeded:
		if len(rest) < 1+8 {
			return fmt.Errorf("%w: truncated stream and seed", ErrState)
		}
		stream := Stream(rest[0])
		if !stream.valid() {
			return fmt.Errorf("%w: unknown stream %d", ErrState, rest[0])
		}
		seed := binary.LittleEndian.Uint64(rest[1:])
		src := new(rand.ChaCha8)
		if err := src.UnmarshalBinary(rest[9:]); err != nil {
			return fmt.Errorf("%w: ChaCha8 state: %v", ErrState, err)
		}
		*s = Source{src: src, rng: rand.New(src), seeded: true, seed: seed, stream: stream}
		return nil
	}
	return fmt.Errorf("%w: unknown mode %d", ErrState, mode)
}
