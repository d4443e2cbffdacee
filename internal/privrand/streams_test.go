package privrand

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

// The legacy streams keep the keys their consumers derived before privrand owned them
// (written out here as audit, datasets' augmentation and validation split, and erm/data's
// synthetic set derived them), so that seeded audits, augmentations, validation splits
// and synthetic data sets, and the checkpoints that depend on them, reproduce.
func TestLegacyStreamKeys(t *testing.T) {
	for _, seed := range []uint64{0, 1, 42, 1<<64 - 1} {
		var le [8]byte
		binary.LittleEndian.PutUint64(le[:], seed)
		coins := sha256.Sum256(append([]byte("privtrain audit coins\x00"), le[:]...))
		augment := sha256.Sum256(append([]byte("privtrain/augment v1\x00"), le[:]...))
		var split, synthetic [32]byte
		copy(split[:], le[:])
		copy(synthetic[:], le[:])
		binary.LittleEndian.PutUint64(synthetic[8:], 0x9e3779b97f4a7c15)
		for _, c := range []struct {
			s    Stream
			want [32]byte
		}{{AuditCoins, coins}, {Augmentation, augment}, {ValidationSplit, split}, {SyntheticData, synthetic}} {
			if got := Key(seed, c.s); got != c.want {
				t.Errorf("Key(%d, %v) = %x, want %x", seed, c.s, got, c.want)
			}
			ref := rand.NewChaCha8(c.want)
			src := NewSeeded(seed, c.s)
			for i := range 10 {
				if a, b := src.Uint64(), ref.Uint64(); a != b {
					t.Fatalf("seed %d %v: draw %d is %x, ChaCha8 of the legacy key gives %x", seed, c.s, i, a, b)
				}
			}
		}
		if got, want := Key64(seed, Augmentation), binary.LittleEndian.Uint64(augment[:8]); got != want {
			t.Errorf("Key64(%d, Augmentation) = %x, want %x", seed, got, want)
		}
	}
}

// Every stream has its own name, a seeded Source of it survives a round trip, and no two
// streams of one seed share a key.
func TestStreamsDistinct(t *testing.T) {
	all := []Stream{Noise, Sampler, ERM, AuditCoins, Augmentation, ValidationSplit, SyntheticData, Tuning}
	names := map[string]bool{}
	keys := map[[32]byte]Stream{}
	for _, s := range all {
		if !s.valid() || names[s.String()] {
			t.Errorf("stream %d (%v): invalid or a repeated name", s, s)
		}
		names[s.String()] = true
		k := Key(5, s)
		if o, ok := keys[k]; ok {
			t.Errorf("streams %v and %v of seed 5 share a key", s, o)
		}
		keys[k] = s
		src := NewSeeded(5, s)
		src.Uint64()
		b, err := src.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var back Source
		if err := back.UnmarshalBinary(b); err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		if back.Stream() != s || back.Uint64() != src.Uint64() {
			t.Errorf("%v: the restored Source is not the saved one", s)
		}
	}
	if (Tuning + 1).valid() {
		t.Errorf("stream %d is valid", Tuning+1)
	}
}

func TestIDAndKey64(t *testing.T) {
	a, b := ID(16), ID(16)
	if len(a) != 32 || a == b {
		t.Errorf("ID(16) gave %q and %q, want two different 32-digit hex strings", a, b)
	}
	if _, err := hex.DecodeString(a); err != nil {
		t.Errorf("ID(16) = %q: %v", a, err)
	}
	if len(ID(4)) != 8 || ID(0) != "" || ID(-1) != "" {
		t.Errorf("ID(4) = %q, ID(0) = %q, ID(-1) = %q", ID(4), ID(0), ID(-1))
	}
	// Two secure 64-bit keys coincide with probability 2⁻⁶⁴.
	if NewKey64() == NewKey64() {
		t.Error("two secure keys coincide")
	}
}
