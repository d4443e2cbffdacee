package training

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// TestPoissonSampling checks the sampler against the Binomial laws that Poisson sampling
// implies, with a fixed seed and bounds of about six standard deviations: n = 1,000
// examples, q = 0.1, T = 3,000 steps.
func TestPoissonSampling(t *testing.T) {
	const n, batch, steps = 1000, 100, 3000
	q := float64(batch) / n
	s, err := newSampler(Poisson, n, batch, ptr(uint64(42)))
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, n)
	pairs := 0 // steps that include both example 2k and 2k+1, summed over k
	var sum, sumSq float64
	for k := range steps {
		idx := s.next(k % 10)
		if !slices.IsSorted(idx) {
			t.Fatal("indices not increasing")
		}
		in := make([]bool, n)
		for _, i := range idx {
			counts[i]++
			in[i] = true
		}
		for i := 0; i < n; i += 2 {
			if in[i] && in[i+1] {
				pairs++
			}
		}
		b := float64(len(idx))
		sum += b
		sumSq += b * b
	}
	// Each example's count is Binomial(T, q): mean 300, sd √(T q(1−q)) ≈ 16.4.
	sd := math.Sqrt(steps * q * (1 - q))
	for i, c := range counts {
		if math.Abs(float64(c)-steps*q) > 6*sd {
			t.Fatalf("example %d sampled %d times in %d steps, want %v ± %.0f", i, c, steps, steps*q, 6*sd)
		}
	}
	// Batch sizes are Binomial(n, q): mean 100, variance 90.
	mean := sum / steps
	variance := sumSq/steps - mean*mean
	if math.Abs(mean-batch) > 6*math.Sqrt(90.0/steps) {
		t.Errorf("mean batch size %v, want 100 ± %.2f", mean, 6*math.Sqrt(90.0/steps))
	}
	if math.Abs(variance-90) > 6*90*math.Sqrt(2.0/steps) {
		t.Errorf("batch-size variance %v, want 90 ± %.1f", variance, 6*90*math.Sqrt(2.0/steps))
	}
	// Independence: a pair is included together with probability q² = 0.01; 500 pairs ×
	// T steps give 15,000 expected joint inclusions, sd ≈ 122.
	want := 500 * steps * q * q
	if math.Abs(float64(pairs)-want) > 6*math.Sqrt(want) {
		t.Errorf("%d joint inclusions of neighbouring examples, want %v ± %.0f", pairs, want, 6*math.Sqrt(want))
	}
}

func ptr[T any](v T) *T { return &v }

func TestShuffleSampling(t *testing.T) {
	const n, batch = 103, 10
	s, err := newSampler(Shuffle, n, batch, ptr(uint64(1)))
	if err != nil {
		t.Fatal(err)
	}
	spe := accountant.StepsPerEpoch(n, batch)
	if spe != 11 {
		t.Fatalf("steps per epoch %d, want ⌈103/10⌉ = 11", spe)
	}
	var epochs [][]int
	for range 3 {
		var seen []int
		for k := range spe {
			idx := s.next(k)
			want := batch
			if k == spe-1 {
				want = n - (spe-1)*batch
			}
			if len(idx) != want {
				t.Fatalf("batch %d has %d examples, want %d", k, len(idx), want)
			}
			seen = append(seen, idx...)
		}
		s.endEpoch()
		sorted := slices.Sorted(slices.Values(seen))
		if !slices.Equal(sorted, seq(n)) {
			t.Fatalf("an epoch did not visit every example exactly once")
		}
		epochs = append(epochs, seen)
	}
	if slices.Equal(epochs[0], epochs[1]) {
		t.Error("two epochs in the same order: the permutation must be fresh every epoch")
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestSamplerSeeding: the same seed gives the same batches, another seed or a secure
// sampler others; and the sampler's stream is not the noise generator's (privrand derives
// the two from the seed under different stream names).
func TestSamplerSeeding(t *testing.T) {
	draw := func(seed *uint64) []int {
		s, err := newSampler(Poisson, 500, 50, seed)
		if err != nil {
			t.Fatal(err)
		}
		var all []int
		for k := range 5 {
			all = append(all, s.next(k)...)
			all = append(all, -1)
		}
		return all
	}
	a, b, c := draw(ptr(uint64(7))), draw(ptr(uint64(7))), draw(ptr(uint64(8)))
	if !slices.Equal(a, b) {
		t.Error("same seed, different batches")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds, same batches")
	}
	if slices.Equal(draw(nil), draw(nil)) {
		t.Error("two secure samplers drew the same batches")
	}
	noise := privrand.NewSeeded(7, privrand.Noise) // dpoptim.NewSeededNoise(7)'s stream
	s, _ := newSampler(Poisson, 10, 1, ptr(uint64(7)))
	if noise.Uint64() == s.src.Uint64() {
		t.Error("the sampler's stream starts like the noise generator's")
	}
}

func TestSamplerRestore(t *testing.T) {
	s, _ := newSampler(Poisson, 300, 30, ptr(uint64(5)))
	s.next(0)
	state := s.state()
	want := slices.Clone(s.next(1))
	r, _ := newSampler(Poisson, 300, 30, ptr(uint64(99)))
	if err := r.restore(checkpoint.SamplerSeeded, state, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.next(1); !slices.Equal(got, want) {
		t.Error("restored seeded sampler draws other batches")
	}
	sec, _ := newSampler(Poisson, 300, 30, nil)
	if sec.state() != nil || sec.kind() != checkpoint.SamplerSecure {
		t.Error("a secure sampler exposes its state")
	}
	for _, tc := range []struct {
		kind  string
		state []byte
		perm  []int
	}{
		{checkpoint.SamplerSeeded, []byte("junk"), nil},
		{checkpoint.SamplerSecure, []byte{1}, nil},
		{"other", nil, nil},
		{checkpoint.SamplerSecure, nil, seq(300)}, // a permutation under Poisson
	} {
		before := r.src
		if err := r.restore(tc.kind, tc.state, tc.perm); err == nil {
			t.Errorf("restore(%q, %d bytes, perm %d) succeeded", tc.kind, len(tc.state), len(tc.perm))
		}
		if r.src != before {
			t.Error("failed restore changed the sampler")
		}
	}
	sh, _ := newSampler(Shuffle, 5, 2, ptr(uint64(1)))
	for _, perm := range [][]int{{0, 1, 2, 3}, {0, 1, 2, 3, 3}, {0, 1, 2, 3, 5}, {0, 1, 2, 3, -1}} {
		if err := sh.restore(checkpoint.SamplerSeeded, sh.state(), perm); err == nil {
			t.Errorf("permutation %v accepted", perm)
		}
	}
}

func TestNewSamplerErrors(t *testing.T) {
	for _, tc := range []struct {
		mode     Sampling
		n, batch int
	}{{Poisson, 0, 1}, {Poisson, 10, 0}, {Poisson, 10, 11}, {Sampling(5), 10, 1}} {
		if _, err := newSampler(tc.mode, tc.n, tc.batch, nil); err == nil {
			t.Errorf("newSampler(%v, %d, %d) succeeded", tc.mode, tc.n, tc.batch)
		}
	}
}

func TestParseSampling(t *testing.T) {
	for _, s := range []Sampling{Poisson, Shuffle} {
		if got, err := ParseSampling(s.String()); err != nil || got != s {
			t.Errorf("ParseSampling(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := ParseSampling("uniform"); err == nil {
		t.Error("ParseSampling accepted an unknown name")
	}
}

// BenchmarkSampler times one logical batch of Poisson sampling from 60,000 examples at
// q = 256/60000 (about 256 geometric gaps), the sampler's whole cost per step.
func BenchmarkSampler(b *testing.B) {
	s, err := newSampler(Poisson, 60000, 256, ptr(uint64(1)))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s.next(0)
	}
}

// A checkpoint written before internal/privrand holds a seeded sampler's bare ChaCha8
// state: the restored sampler continues that ChaCha8 stream, here the Poisson batches
// that privrand.Poisson draws from a ChaCha8 generator built by hand.
func TestSamplerRestoreLegacyState(t *testing.T) {
	var key [32]byte
	key[3] = 1
	old := rand.NewChaCha8(key)
	state, _ := old.MarshalBinary()
	s, _ := newSampler(Poisson, 300, 30, ptr(uint64(5)))
	if err := s.restore(checkpoint.SamplerSeeded, state, nil); err != nil {
		t.Fatal(err)
	}
	if s.kind() != checkpoint.SamplerSeeded || s.state() == nil {
		t.Error("a restored legacy seeded sampler is not seeded")
	}
	p, _ := privrand.NewPoisson(300, 0.1)
	ref := rand.New(old)
	for k := range 5 {
		if got, want := s.next(k), p.Sample(ref, nil); !slices.Equal(got, want) {
			t.Fatalf("step %d: batch %v, the saved stream gives %v", k, got, want)
		}
	}
	if err := s.restore(checkpoint.SamplerSeeded, state[:len(state)-1], nil); err == nil {
		t.Error("a truncated legacy state was accepted")
	}
}
