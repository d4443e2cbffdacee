package dpoptim

import (
	"encoding"
	"fmt"

	"github.com/privtrain/privtrain/internal/privrand"
)

// Noise is the random source of the Gaussian noise added by a [Private] step: the
// privrand.Noise stream of a ChaCha8 generator, with a secure key ("secure", the
// default) or from an explicit seed for reproducible runs ("seeded(s)"). privrand draws
// the noise (privrand.AddGaussian: the ziggurat NormFloat64 of math/rand/v2, in index
// order). See internal/privrand for the key derivation and why a secure generator's
// state is never written out.
//
// A Noise is not safe for concurrent use.
type Noise struct {
	src *privrand.Source
}

// NewSecureNoise returns a Noise keyed with 32 bytes from the operating system's secure generator. Its stream cannot
// be predicted or replayed, and its state is never serialised (see [Noise.MarshalBinary]).
func NewSecureNoise() (*Noise, error) {
	src, err := privrand.NewSecure(privrand.Noise)
	if err != nil {
		return nil, fmt.Errorf("dpoptim: %w", err)
	}
	return newNoise(src), nil
}

// NewSeededNoise returns a Noise whose stream is fixed by seed: runs with the same seed
// add the same noise. Use it for reproducible experiments only; anyone who knows the seed
// can subtract the noise, so the run is not private against them.
func NewSeededNoise(seed uint64) *Noise {
	return newNoise(privrand.NewSeeded(seed, privrand.Noise))
}

var (
	_ encoding.BinaryMarshaler   = (*Noise)(nil)
	_ encoding.BinaryUnmarshaler = (*Noise)(nil)
	_ fmt.Stringer               = (*Noise)(nil)
)

func newNoise(src *privrand.Source) *Noise { return &Noise{src: src} }

// String returns "secure" or "seeded(<seed>)", for logs; use [Noise.Seed] to branch on
// the mode.
func (n *Noise) String() string { return n.src.String() }

// Seed returns the seed and true for a seeded Noise, and false for a secure one.
func (n *Noise) Seed() (uint64, bool) { return n.src.Seed() }

// Normal returns one standard normal draw.
func (n *Noise) Normal() float64 { return n.src.Normal() }

// MarshalBinary encodes the generator for a checkpoint (privrand's encoding). A seeded
// Noise encodes its seed and exact position, so that a restored run continues bit for
// bit. A secure Noise encodes only that it is secure: writing its state to disk would let
// anyone who reads the checkpoint predict the noise still to come, so
// [Noise.UnmarshalBinary] gives it a fresh secure key instead.
func (n *Noise) MarshalBinary() ([]byte, error) { return n.src.MarshalBinary() }

// UnmarshalBinary restores a generator encoded by MarshalBinary: a seeded one to the exact
// position it was saved at, a secure one with a fresh secure key. Malformed input,
// or another stream's state (a sampler's), gives an error wrapping ErrState and leaves n
// unchanged.
func (n *Noise) UnmarshalBinary(data []byte) error {
	data = fromLegacy(data)
	src := new(privrand.Source)
	if err := src.UnmarshalBinary(data); err != nil {
		return fmt.Errorf("%w: noise generator: %w", ErrState, err)
	}
	if _, seeded := src.Seed(); !seeded {
		fresh, err := privrand.NewSecure(privrand.Noise)
		if err != nil {
			return fmt.Errorf("dpoptim: %w", err)
		}
		src = fresh
	} else if src.Stream() != privrand.Noise {
		return fmt.Errorf("%w: noise generator: the state of a %v stream", ErrState, src.Stream())
	}
	*n = *newNoise(src)
	return nil
}

// legacyMagic starts the encoding of checkpoints written before internal/privrand:
// legacyMagic, version 1, kind (0 secure, 1 seeded), then for a seeded generator the
// seed (little-endian) and the ChaCha8 state. It is privrand's layout without the
// stream, so fromLegacy rewrites such input into privrand's encoding of the Noise stream
// (the stream a seeded run's noise continues in is the saved ChaCha8 state, whatever key
// it began from) and returns any other input unchanged.
const legacyMagic = "dpoptim.Noise"

func fromLegacy(data []byte) []byte {
	if len(data) < len(legacyMagic)+2 || string(data[:len(legacyMagic)]) != legacyMagic || data[len(legacyMagic)] != 1 {
		return data
	}
	kind, rest := data[len(legacyMagic)+1], data[len(legacyMagic)+2:]
	b := append([]byte(privrand.Magic), privrand.Version, kind)
	if kind == 1 {
		b = append(b, byte(privrand.Noise))
	}
	return append(b, rest...)
}
