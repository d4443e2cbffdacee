package privrand

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestKeyed: sources built from one key draw the same stream (ChaCha8 of that key, as
// math/rand/v2 builds it), another key another stream; a keyed source reports no seed
// and its encoding is the bare secure header, so that a checkpoint never holds the key
// that the ranks of a job share.
func TestKeyed(t *testing.T) {
	key, err := NewSecureKey()
	if err != nil {
		t.Fatal(err)
	}
	if key == ([32]byte{}) {
		t.Fatal("NewSecureKey returned the zero key")
	}
	a, b := NewKeyed(key, Sampler), NewKeyed(key, Sampler)
	ref := rand.NewChaCha8(key)
	other, err := NewSecureKey()
	if err != nil {
		t.Fatal(err)
	}
	c := NewKeyed(other, Sampler)
	same := 0
	for i := range 64 {
		x, y, want, z := a.Uint64(), b.Uint64(), ref.Uint64(), c.Uint64()
		if x != want || y != want {
			t.Fatalf("draw %d: %x and %x from one key, ChaCha8 of the key gives %x", i, x, y, want)
		}
		if z == want {
			same++
		}
	}
	if same > 1 {
		t.Errorf("another key repeated %d of 64 draws", same)
	}
	if _, seeded := a.Seed(); seeded || a.String() != "secure" || a.Stream() != Sampler {
		t.Errorf("keyed source: seeded %v, %q, stream %v; want secure, the Sampler stream", seeded, a.String(), a.Stream())
	}
	enc, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte(Magic), Version, modeSecure); !bytes.Equal(enc, want) {
		t.Errorf("encoding %x, want the secure header %x alone", enc, want)
	}
}
