package privrand

import (
	"slices"
	"testing"
)

// refDraws is what a Source of seed gives for the sequence of draws: each entry of ops is
// either a Gaussian vector of that length (n > 0, std 1.5, added to zeros), or −1 for one
// Normal(); computed from the reference stream (noiseRef), not from a Source.
func refDraws(seed uint64, ops []int) [][]float64 {
	ref := noiseRef(seed)
	var out [][]float64
	for _, n := range ops {
		if n < 0 {
			out = append(out, []float64{ref.NormFloat64()})
			continue
		}
		v := make([]float64, n)
		for j := range v {
			v[j] += 1.5 * ref.NormFloat64()
		}
		out = append(out, v)
	}
	return out
}

// A prefetched Gaussian draw gives the stream's values in order, bit for bit, and leaves
// the generator where the draw would have — whether the prefetch is used, made stale by
// another draw, of another length, or replaced; the state encodings (a checkpoint's) agree
// with a Source that never prefetched at every point.
func TestPrefetchGaussianIsTheStream(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ops      []int // as refDraws
		prefetch []int // before op i, prefetch this many values (0: none)
		taken    int   // prefetches used
	}{
		{"used", []int{1000, 1000, 1000}, []int{1000, 1000, 1000}, 3},
		{"stale after a Normal", []int{1000, -1, 1000}, []int{0, 1000, 0}, 0},
		{"other length", []int{700, 1000}, []int{0, 999}, 0},
		{"replaced", []int{500, 300}, []int{0, 300}, 1},
		{"empty vector", []int{0, 64}, []int{0, 64}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := refDraws(21, tc.ops)
			src, plain := NewSeeded(21, Noise), NewSeeded(21, Noise)
			for i, n := range tc.ops {
				if tc.name == "replaced" && i == 1 {
					src.PrefetchGaussian(make([]float64, 17)) // replaced by the next one
				}
				if tc.prefetch[i] > 0 {
					src.PrefetchGaussian(make([]float64, tc.prefetch[i]))
				}
				if got, _ := src.MarshalBinary(); !slices.Equal(got, mustMarshal(t, plain)) {
					t.Fatalf("op %d: a pending prefetch changed the state's encoding", i)
				}
				var got []float64
				if n < 0 {
					got = []float64{src.Normal()}
					plain.Normal()
				} else {
					got = make([]float64, n)
					src.AddGaussian(got, 1.5)
					plain.AddGaussian(make([]float64, n), 1.5)
				}
				if !slices.Equal(got, want[i]) {
					t.Fatalf("op %d: %v…, want the stream's %v…", i, head(got), head(want[i]))
				}
				if !slices.Equal(mustMarshal(t, src), mustMarshal(t, plain)) {
					t.Fatalf("op %d: state differs from a Source without prefetch", i)
				}
			}
			if src.taken != tc.taken {
				t.Fatalf("%d prefetches used, want %d", src.taken, tc.taken)
			}
		})
	}
}

// A scale of 0 draws nothing, prefetch or not: the pending values stay unused and the
// next draw is the stream's first.
func TestPrefetchZeroScaleDrawsNothing(t *testing.T) {
	src := NewSeeded(5, Noise)
	src.PrefetchGaussian(make([]float64, 10))
	v := make([]float64, 10)
	src.AddGaussian(v, 0)
	if slices.ContainsFunc(v, func(x float64) bool { return x != 0 }) {
		t.Fatalf("std 0 added %v", v)
	}
	if got, want := src.Normal(), noiseRef(5).NormFloat64(); got != want {
		t.Fatalf("first draw after std 0: %v, want the stream's first %v", got, want)
	}
}

// One buffer serves every step: a prefetch into the buffer the last one filled, after
// that one was used, gives the stream's next values.
func TestPrefetchReusesBuffer(t *testing.T) {
	src, buf := NewSeeded(9, Noise), make([]float64, 256)
	want := refDraws(9, []int{256, 256, 256})
	for i := range want {
		src.PrefetchGaussian(buf)
		got := make([]float64, 256)
		src.AddGaussian(got, 1.5)
		if !slices.Equal(got, want[i]) {
			t.Fatalf("step %d: %v…, want %v…", i, head(got), head(want[i]))
		}
	}
	if src.taken != 3 {
		t.Fatalf("%d prefetches used, want 3", src.taken)
	}
}

// Restoring a Source (a checkpoint's SetState) with a prefetch pending waits for it, so the
// caller may hand the same buffer to the next prefetch (run with -race), and the restored
// generator's draws are its own: a secure Source reseeds, a seeded one continues from the
// saved position.
func TestPrefetchThenRestore(t *testing.T) {
	buf := make([]float64, 4096)
	sec, err := NewSecure(Noise)
	if err != nil {
		t.Fatal(err)
	}
	enc := mustMarshal(t, sec)
	sec.PrefetchGaussian(buf)
	if err := sec.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	sec.PrefetchGaussian(buf)
	sec.AddGaussian(make([]float64, 4096), 1)

	src := NewSeeded(3, Noise)
	saved := mustMarshal(t, src)
	src.PrefetchGaussian(buf)
	if err := src.UnmarshalBinary(saved); err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 4096)
	src.AddGaussian(got, 1.5)
	if want := refDraws(3, []int{4096})[0]; !slices.Equal(got, want) {
		t.Fatalf("after restore: %v…, want the stream's %v…", head(got), head(want))
	}
}

func mustMarshal(t *testing.T, s *Source) []byte {
	t.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func head(v []float64) []float64 { return v[:min(3, len(v))] }
