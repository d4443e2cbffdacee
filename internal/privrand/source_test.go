package privrand

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// The key derivation is the one the package doc writes down, recomputed here by hand.
func TestKeyDerivation(t *testing.T) {
	for _, c := range []struct {
		seed   uint64
		stream Stream
		name   string
	}{{0, Noise, "noise"}, {42, Sampler, "sampler"}, {1<<64 - 1, ERM, "erm"}} {
		msg := []byte("privtrain/privrand v1\x00" + c.name + "\x00")
		msg = binary.LittleEndian.AppendUint64(msg, c.seed)
		want := sha256.Sum256(msg)
		if got := Key(c.seed, c.stream); got != want {
			t.Errorf("Key(%d, %v) = %x, want %x", c.seed, c.stream, got, want)
		}
		ref := rand.NewChaCha8(want)
		s := NewSeeded(c.seed, c.stream)
		for i := range 100 {
			if a, b := s.Uint64(), ref.Uint64(); a != b {
				t.Fatalf("seed %d %v: draw %d is %x, ChaCha8 of the derived key gives %x", c.seed, c.stream, i, a, b)
			}
		}
	}
}

func TestSeededStreams(t *testing.T) {
	first := func(s *Source) [4]uint64 {
		return [4]uint64{s.Uint64(), s.Uint64(), s.Uint64(), s.Uint64()}
	}
	a, b := first(NewSeeded(7, Noise)), first(NewSeeded(7, Noise))
	if a != b {
		t.Error("the same seed and stream give different draws")
	}
	for _, other := range []*Source{NewSeeded(8, Noise), NewSeeded(7, Sampler), NewSeeded(7, ERM)} {
		if first(other) == a {
			t.Errorf("seed %v stream %v repeats seed 7's noise stream", other.seed, other.Stream())
		}
	}
	s := NewSeeded(7, Sampler)
	if seed, ok := s.Seed(); !ok || seed != 7 {
		t.Errorf("Seed() = %d, %v; want 7, true", seed, ok)
	}
	if s.String() != "seeded(7)" || s.Stream() != Sampler {
		t.Errorf("String() = %q, Stream() = %v", s.String(), s.Stream())
	}
}

func TestSecure(t *testing.T) {
	a, err := NewSecure(Noise)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSecure(Noise)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Seed(); ok || a.String() != "secure" {
		t.Errorf("a secure Source reports Seed ok = %v, String %q", ok, a.String())
	}
	// Two crypto/rand keys coincide with probability 2⁻²⁵⁶.
	if a.Uint64() == b.Uint64() && a.Uint64() == b.Uint64() {
		t.Error("two secure sources give the same stream")
	}
	enc, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) != headerBytes {
		t.Errorf("a secure encoding has %d bytes, want the %d-byte header only", len(enc), headerBytes)
	}
	var r Source
	if err := r.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Seed(); ok {
		t.Error("a restored secure Source is seeded")
	}
	if r.Uint64() == a.Uint64() && r.Uint64() == a.Uint64() {
		t.Error("a restored secure Source continues the saved stream")
	}
}

// Standard normal draws with a fixed seed: over N = 10⁶ draws the mean (standard error
// 1/√N = 0.001), the variance (standard error √(2/N) ≈ 0.0014), the kurtosis (3, standard
// error √(24/N) ≈ 0.005) and the tail frequencies P(|X| > 2) = 0.0455003 and
// P(|X| > 3) = 0.0026998 (erfc(√2), erfc(3/√2)) within about five standard errors.
func TestNormalMoments(t *testing.T) {
	const n = 1000000
	for _, seed := range []uint64{1, 2} {
		s := NewSeeded(seed, Noise)
		var sum, sum2, sum4 float64
		var over2, over3 int
		for range n {
			x := s.Normal()
			sum += x
			sum2 += x * x
			sum4 += x * x * x * x
			if math.Abs(x) > 2 {
				over2++
			}
			if math.Abs(x) > 3 {
				over3++
			}
		}
		mean, variance, kurt := sum/n, sum2/n-(sum/n)*(sum/n), sum4/n
		if math.Abs(mean) > 5/math.Sqrt(n) {
			t.Errorf("seed %d: mean %v, want 0 ± %v", seed, mean, 5/math.Sqrt(n))
		}
		if math.Abs(variance-1) > 5*math.Sqrt(2.0/n) {
			t.Errorf("seed %d: variance %v, want 1 ± %v", seed, variance, 5*math.Sqrt(2.0/n))
		}
		if math.Abs(kurt-3) > 5*math.Sqrt(24.0/n) {
			t.Errorf("seed %d: E X⁴ = %v, want 3 ± %v", seed, kurt, 5*math.Sqrt(24.0/n))
		}
		for _, tail := range []struct {
			got int
			p   float64
			at  float64
		}{{over2, math.Erfc(2 / math.Sqrt2), 2}, {over3, math.Erfc(3 / math.Sqrt2), 3}} {
			want, sd := n*tail.p, math.Sqrt(n*tail.p*(1-tail.p))
			if math.Abs(float64(tail.got)-want) > 5*sd {
				t.Errorf("seed %d: %d draws with |X| > %v, want %.0f ± %.0f", seed, tail.got, tail.at, want, 5*sd)
			}
		}
	}
}

func TestMarshalContinuesStream(t *testing.T) {
	for _, skip := range []int{0, 1, 3, 100, 1001} {
		a := NewSeeded(7, Sampler)
		for range skip {
			a.Normal()
		}
		enc, err := a.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		b := NewSeeded(99, Noise)
		if err := b.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		if seed, ok := b.Seed(); !ok || seed != 7 || b.Stream() != Sampler {
			t.Errorf("restored Seed() = %d, %v, stream %v", seed, ok, b.Stream())
		}
		for i := range 500 {
			if x, y := a.Normal(), b.Normal(); x != y {
				t.Fatalf("after %d draws: draw %d differs: %v vs %v", skip, i, x, y)
			}
		}
	}
}

func TestUnmarshalErrors(t *testing.T) {
	good, _ := NewSeeded(1, Noise).MarshalBinary()
	hdr := func(b ...byte) []byte { return append([]byte(Magic), b...) }
	cases := map[string][]byte{
		"empty":          nil,
		"wrong magic":    append([]byte("privranD"), good[len(Magic):]...),
		"magic only":     []byte(Magic),
		"no mode":        hdr(Version),
		"bad version":    hdr(9, modeSeeded),
		"bad mode":       hdr(Version, 7),
		"secure+trailer": hdr(Version, modeSecure, 0),
		"no stream":      good[:headerBytes],
		"truncated seed": good[:headerBytes+1+5],
		"bad stream":     append(hdr(Version, modeSeeded, 0), good[headerBytes+1:]...),
		"unknown stream": append(hdr(Version, modeSeeded, 200), good[headerBytes+1:]...),
		"no generator":   good[:headerBytes+1+8],
		"truncated":      good[:len(good)-3],
		"trailing":       append(bytes.Clone(good), 1, 2, 3),
	}
	for name, data := range cases {
		s := NewSeeded(5, Sampler)
		s.Normal()
		saved, _ := s.MarshalBinary()
		if err := s.UnmarshalBinary(data); !errors.Is(err, ErrState) {
			t.Errorf("%s: err = %v, want ErrState", name, err)
		}
		if after, _ := s.MarshalBinary(); !bytes.Equal(saved, after) {
			t.Errorf("%s: failed UnmarshalBinary changed the generator", name)
		}
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	seeded := NewSeeded(3, ERM)
	for range 5 {
		seeded.Normal()
	}
	enc, _ := seeded.MarshalBinary()
	f.Add(enc)
	f.Add(enc[:len(enc)-1])
	f.Add(enc[:headerBytes+1+8])
	f.Add([]byte(Magic + "\x01\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Source
		if err := s.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrState) {
				t.Fatalf("error %v does not wrap ErrState", err)
			}
			return
		}
		// Anything accepted re-encodes to a generator that behaves identically.
		again, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var r Source
		if err := r.UnmarshalBinary(again); err != nil {
			t.Fatalf("re-encoded generator refused: %v", err)
		}
		if _, seeded := s.Seed(); seeded && s.Uint64() != r.Uint64() {
			t.Fatal("re-encoded generator diverges")
		}
	})
}

func BenchmarkNormal(b *testing.B) {
	s := NewSeeded(1, Noise)
	v := make([]float64, 26010)
	for b.Loop() {
		for i := range v {
			v[i] = s.Normal()
		}
	}
}
