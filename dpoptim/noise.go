package dpoptim

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Noise is the random source of the Gaussian noise added by a [Private] step: a ChaCha8
// generator (math/rand/v2), seeded from crypto/rand ("secure", the default) or from an
// explicit seed for reproducible runs ("seeded(s)"). Gaussian draws use the ziggurat
// NormFloat64 of math/rand/v2.
//
// A Noise is not safe for concurrent use.
type Noise struct {
	src    *rand.ChaCha8
	rng    *rand.Rand
	seeded bool
	seed   uint64
}

// NewSecureNoise returns a Noise seeded with 32 bytes from crypto/rand. Its stream cannot
// be predicted or replayed, and its state is never serialised (see [Noise.MarshalBinary]).
func NewSecureNoise() (*Noise, error) {
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("dpoptim: seeding the noise from crypto/rand: %w", err)
	}
	return newNoise(key, false, 0), nil
}

// NewSeededNoise returns a Noise whose stream is fixed by seed: runs with the same seed
// add the same noise. Use it for reproducible experiments only; anyone who knows the seed
// can subtract the noise, so the run is not private against them.
func NewSeededNoise(seed uint64) *Noise {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:8], seed)
	return newNoise(key, true, seed)
}

func newNoise(key [32]byte, seeded bool, seed uint64) *Noise {
	src := rand.NewChaCha8(key)
	return &Noise{src: src, rng: rand.New(src), seeded: seeded, seed: seed}
}

// String returns "secure" or "seeded(<seed>)", for logs and checkpoints.
func (n *Noise) String() string {
	if n.seeded {
		return "seeded(" + strconv.FormatUint(n.seed, 10) + ")"
	}
	return "secure"
}

// Seed returns the seed and true for a seeded Noise, and false for a secure one.
func (n *Noise) Seed() (uint64, bool) { return n.seed, n.seeded }

// Normal returns one standard normal draw.
func (n *Noise) Normal() float64 { return n.rng.NormFloat64() }

// The serialised form: magic, version, kind, then for a seeded Noise the seed and the
// ChaCha8 state.
const (
	noiseMagic   = "dpoptim.Noise"
	noiseVersion = 1
	kindSecure   = 0
	kindSeeded   = 1
)

// MarshalBinary encodes the generator for a checkpoint. A seeded Noise encodes its seed
// and exact position, so that a restored run continues bit for bit. A secure Noise
// encodes only that it is secure: writing its state to disk would let anyone who reads
// the checkpoint predict the noise still to come, so [Noise.UnmarshalBinary] reseeds it
// from crypto/rand instead.
func (n *Noise) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, len(noiseMagic)+2+8+64)
	b = append(b, noiseMagic...)
	b = append(b, noiseVersion)
	if !n.seeded {
		return append(b, kindSecure), nil
	}
	b = append(b, kindSeeded)
	b = binary.LittleEndian.AppendUint64(b, n.seed)
	return n.src.AppendBinary(b)
}

// UnmarshalBinary restores a generator encoded by MarshalBinary: a seeded one to the exact
// position it was saved at, a secure one freshly seeded from crypto/rand. Malformed input
// gives an error wrapping ErrState and leaves n unchanged.
func (n *Noise) UnmarshalBinary(data []byte) error {
	rest, ok := cutPrefix(data, noiseMagic)
	if !ok || len(rest) < 2 {
		return fmt.Errorf("%w: noise generator: missing %q header", ErrState, noiseMagic)
	}
	if rest[0] != noiseVersion {
		return fmt.Errorf("%w: noise generator: unknown version %d", ErrState, rest[0])
	}
	kind, rest := rest[1], rest[2:]
	switch kind {
	case kindSecure:
		if len(rest) != 0 {
			return fmt.Errorf("%w: noise generator: %d trailing bytes after a secure header", ErrState, len(rest))
		}
		fresh, err := NewSecureNoise()
		if err != nil {
			return err
		}
		*n = *fresh
		return nil
	case kindSeeded:
		if len(rest) < 8 {
			return fmt.Errorf("%w: noise generator: truncated seed", ErrState)
		}
		seed := binary.LittleEndian.Uint64(rest)
		src := new(rand.ChaCha8)
		if err := src.UnmarshalBinary(rest[8:]); err != nil {
			return fmt.Errorf("%w: noise generator: %v", ErrState, err)
		}
		*n = Noise{src: src, rng: rand.New(src), seeded: true, seed: seed}
		return nil
	default:
		return fmt.Errorf("%w: noise generator: unknown kind %d", ErrState, kind)
	}
}

func cutPrefix(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return b, false
	}
	return b[len(prefix):], true
}
