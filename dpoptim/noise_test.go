package dpoptim

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/internal/privrand"
)

// The layout of privrand's encoding, which Noise uses: magic, version, mode (0 secure,
// 1 seeded), then for a seeded generator its stream, seed and ChaCha8 state.
const (
	noiseMagic   = privrand.Magic
	noiseVersion = privrand.Version
	kindSecure   = 0
	kindSeeded   = 1
)

// A seeded Noise draws the privrand.Noise stream of its seed, the derivation that
// internal/privrand documents and tests, and refuses the state of another stream.
func TestNoiseStream(t *testing.T) {
	n, ref := NewSeededNoise(11), privrand.NewSeeded(11, privrand.Noise)
	for i := range 100 {
		if a, b := n.Normal(), ref.Normal(); a != b {
			t.Fatalf("draw %d: %v, privrand's noise stream gives %v", i, a, b)
		}
	}
	enc, _ := privrand.NewSeeded(11, privrand.Sampler).MarshalBinary()
	if err := n.UnmarshalBinary(enc); !errors.Is(err, ErrState) {
		t.Errorf("a sampler's state restored as noise: err = %v, want ErrState", err)
	}
}

// The noise a Private step adds, measured through the whole step: params start at 0, the
// clipped sum is 0, SGD with rate 1 makes params = −(noise)/(q·n). Over 10⁶ coordinates
// the sample standard deviation must be within 1 % of z·C/(q·n) (its standard error is
// 0.07 %) and the mean within 4 standard errors of 0. Kurtosis (3 for a Gaussian, standard
// error √(24/N) ≈ 0.005) and the lag-1 correlation (standard error 1/√N) check shape and
// independence.
func TestNoiseStatistics(t *testing.T) {
	const d = 1000000
	for _, c := range []struct {
		z, clip, q float64
		n          int
		seed       uint64
	}{
		{1.1, 1, 1, 1, 1},
		{3, 0.5, 0.004, 60000, 2}, // q·n = 240
	} {
		p := mustPrivate(t, NewSGD(Constant(1)), PrivateConfig{NoiseMultiplier: c.z, ClipNorm: c.clip,
			SampleRate: c.q, DatasetSize: c.n, Recorder: &fakeRecorder{}, Noise: NewSeededNoise(c.seed)})
		w := make([]float64, d)
		if err := p.Step(w, make([]float64, d), 0); err != nil {
			t.Fatal(err)
		}
		var sum, sum2 float64
		for _, x := range w {
			sum += x
			sum2 += x * x
		}
		mean := sum / d
		variance := sum2/d - mean*mean
		std := math.Sqrt(variance)
		want := c.z * c.clip / (c.q * float64(c.n))
		if math.Abs(std/want-1) > 0.01 {
			t.Errorf("z=%v C=%v q·n=%v: std = %v, want %v ± 1%%", c.z, c.clip, c.q*float64(c.n), std, want)
		}
		if se := want / math.Sqrt(d); math.Abs(mean) > 4*se {
			t.Errorf("mean = %v, more than 4 standard errors (%v) from 0", mean, se)
		}
		var m4, lag float64
		for i, x := range w {
			u := (x - mean) / std
			m4 += u * u * u * u
			if i > 0 {
				lag += u * (w[i-1] - mean) / std
			}
		}
		if k := m4 / d; math.Abs(k-3) > 0.05 {
			t.Errorf("kurtosis %v, want 3 ± 0.05", k)
		}
		if r := lag / (d - 1); math.Abs(r) > 4/math.Sqrt(d) {
			t.Errorf("lag-1 correlation %v, want |r| ≤ 4/√N", r)
		}
	}
}

func TestNoiseSeededIsReproducible(t *testing.T) {
	a, b, other := NewSeededNoise(42), NewSeededNoise(42), NewSeededNoise(43)
	same := true
	for range 1000 {
		x, y, o := a.Normal(), b.Normal(), other.Normal()
		if x != y {
			t.Fatal("two generators seeded 42 differ")
		}
		same = same && x == o
	}
	if same {
		t.Error("seeds 42 and 43 give the same stream")
	}
	if a.String() != "seeded(42)" {
		t.Errorf("String() = %q, want seeded(42)", a.String())
	}
	if s, ok := a.Seed(); !ok || s != 42 {
		t.Errorf("Seed() = %v, %v", s, ok)
	}
}

func TestNoiseSecure(t *testing.T) {
	a, err := NewSecureNoise()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSecureNoise()
	if err != nil {
		t.Fatal(err)
	}
	if a.String() != "secure" {
		t.Errorf("String() = %q, want secure", a.String())
	}
	if _, ok := a.Seed(); ok {
		t.Error("a secure Noise reports a seed")
	}
	// Two crypto/rand keys coincide with probability 2⁻²⁵⁶.
	if a.Normal() == b.Normal() && a.Normal() == b.Normal() {
		t.Error("two secure generators give the same stream")
	}
	// The serialised form of a secure generator holds no state; restoring reseeds.
	enc, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) != len(noiseMagic)+2 {
		t.Errorf("secure encoding has %d bytes, want only the %d-byte header", len(enc), len(noiseMagic)+2)
	}
	var restored Noise
	if err := restored.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	if restored.String() != "secure" {
		t.Errorf("restored String() = %q", restored.String())
	}
	if restored.Normal() == a.Normal() && restored.Normal() == a.Normal() {
		t.Error("a restored secure generator continues the saved stream")
	}
}

func TestNoiseMarshalContinuesStream(t *testing.T) {
	for _, skip := range []int{0, 1, 3, 100, 1001} {
		a := NewSeededNoise(7)
		for range skip {
			a.Normal()
		}
		enc, err := a.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var b Noise
		if err := b.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		if b.String() != "seeded(7)" {
			t.Errorf("restored String() = %q", b.String())
		}
		for i := range 500 {
			if x, y := a.Normal(), b.Normal(); x != y {
				t.Fatalf("after %d draws: draw %d differs: %v vs %v", skip, i, x, y)
			}
		}
	}
}

func TestNoiseUnmarshalErrors(t *testing.T) {
	good, _ := NewSeededNoise(1).MarshalBinary()
	cases := map[string][]byte{
		"empty":          nil,
		"wrong magic":    append([]byte("dpoptim.Nois?"), good[len(noiseMagic):]...),
		"header only":    []byte(noiseMagic),
		"bad version":    append([]byte(noiseMagic), 9, kindSeeded),
		"bad kind":       append([]byte(noiseMagic), noiseVersion, 7),
		"secure+trailer": append([]byte(noiseMagic), noiseVersion, kindSecure, 0),
		"truncated seed": good[:len(noiseMagic)+2+5],
		"no generator":   good[:len(noiseMagic)+2+8],
		"truncated":      good[:len(good)-3],
		"trailing":       append(bytes.Clone(good), 1, 2, 3),
	}
	for name, data := range cases {
		n := NewSeededNoise(5)
		before := n.Normal()
		_ = before
		saved, _ := n.MarshalBinary()
		if err := n.UnmarshalBinary(data); !errors.Is(err, ErrState) {
			t.Errorf("%s: err = %v, want ErrState", name, err)
		}
		after, _ := n.MarshalBinary()
		if !bytes.Equal(saved, after) {
			t.Errorf("%s: failed UnmarshalBinary changed the generator", name)
		}
	}
}

func FuzzNoiseUnmarshalBinary(f *testing.F) {
	seeded := NewSeededNoise(3)
	for range 5 {
		seeded.Normal()
	}
	enc, _ := seeded.MarshalBinary()
	f.Add(enc)
	f.Add(enc[:len(enc)-1])
	secure, _ := NewSeededNoise(0).MarshalBinary()
	f.Add(secure[:len(noiseMagic)+2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var n Noise
		if err := n.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrState) {
				t.Fatalf("error %v does not wrap ErrState", err)
			}
			return
		}
		// Anything accepted re-encodes to a generator that behaves identically.
		again, err := n.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var m Noise
		if err := m.UnmarshalBinary(again); err != nil {
			t.Fatalf("re-encoded generator refused: %v", err)
		}
		if _, seeded := n.Seed(); seeded && n.Normal() != m.Normal() {
			t.Fatal("re-encoded generator diverges")
		}
	})
}

func BenchmarkNoise(b *testing.B) {
	n := NewSeededNoise(1)
	v := make([]float64, 26010)
	b.ReportAllocs()
	for b.Loop() {
		for i := range v {
			v[i] = n.Normal()
		}
	}
}

// Checkpoints written before internal/privrand hold the old encoding ("dpoptim.Noise",
// version 1, kind, seed, ChaCha8 state), built here by hand: a secure one restores as a
// fresh secure generator, a seeded one continues the saved ChaCha8 stream.
func TestNoiseLegacyEncoding(t *testing.T) {
	var key [32]byte
	key[0] = 9
	old := rand.NewChaCha8(key)
	state, _ := old.MarshalBinary()
	seeded := append([]byte("dpoptim.Noise\x01\x01"), 9, 0, 0, 0, 0, 0, 0, 0)
	seeded = append(seeded, state...)
	var n Noise
	if err := n.UnmarshalBinary(seeded); err != nil {
		t.Fatal(err)
	}
	if s, ok := n.Seed(); !ok || s != 9 {
		t.Errorf("legacy seeded noise restored with Seed() = %d, %v", s, ok)
	}
	want := rand.New(old)
	for i := range 100 {
		if a, b := n.Normal(), want.NormFloat64(); a != b {
			t.Fatalf("draw %d: %v, the saved ChaCha8 stream gives %v", i, a, b)
		}
	}
	if err := n.UnmarshalBinary([]byte("dpoptim.Noise\x01\x00")); err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Seed(); ok {
		t.Error("a legacy secure encoding restored as seeded")
	}
	for _, bad := range [][]byte{seeded[:len(seeded)-1], []byte("dpoptim.Noise\x01\x00\x00"), []byte("dpoptim.Noise\x02\x00")} {
		if err := n.UnmarshalBinary(bad); !errors.Is(err, ErrState) {
			t.Errorf("legacy %q: err = %v, want ErrState", bad, err)
		}
	}
}
