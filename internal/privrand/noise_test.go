package privrand

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// noiseRef is the Noise stream of seed, rebuilt from the package doc's key derivation
// without Key or NewSeeded.
func noiseRef(seed uint64) *rand.Rand {
	msg := binary.LittleEndian.AppendUint64([]byte("privtrain/privrand v1\x00noise\x00"), seed)
	return rand.New(rand.NewChaCha8(sha256.Sum256(msg)))
}

// Gaussian noise is std·NormFloat64 of the Noise stream, entry by entry in index order,
// added to what the slice held; Laplace noise is b·(ExpFloat64 − ExpFloat64) in order.
func TestNoiseIsTheStreamInOrder(t *testing.T) {
	base := []float64{1, -2, 0.5, 3, 0, -0.25, 7, 1e-3}
	const std, b = 1.7, 0.3

	got := slices.Clone(base)
	NewSeeded(11, Noise).AddGaussian(got, std)
	ref := noiseRef(11)
	for j := range base {
		if want := base[j] + std*ref.NormFloat64(); got[j] != want {
			t.Fatalf("AddGaussian: entry %d = %v, want %v", j, got[j], want)
		}
	}

	got = slices.Clone(base)
	src := NewSeeded(11, Noise)
	AddLaplace(src.Rand(), got, b)
	ref = noiseRef(11)
	for j := range base {
		e1 := ref.ExpFloat64()
		e2 := ref.ExpFloat64()
		if want := base[j] + b*(e1-e2); got[j] != want {
			t.Fatalf("AddLaplace: entry %d = %v, want %v", j, got[j], want)
		}
	}

	got = slices.Clone(base)
	idx := []int{5, 2, 5, 0}
	AddGaussianAt(NewSeeded(11, Noise).Rand(), got, idx, std)
	want := slices.Clone(base)
	ref = noiseRef(11)
	for _, i := range idx {
		want[i] += std * ref.NormFloat64()
	}
	if !slices.Equal(got, want) {
		t.Fatalf("AddGaussianAt(%v) = %v, want %v", idx, got, want)
	}
}

// A scale of 0 adds nothing and draws nothing: the next draw is the stream's first.
func TestZeroScaleDrawsNothing(t *testing.T) {
	v := []float64{1, 2, 3}
	s := NewSeeded(3, Noise)
	s.AddGaussian(v, 0)
	s.AddLaplace(v, 0)
	AddGaussianAt(s.Rand(), v, []int{0, 1}, 0)
	if !slices.Equal(v, []float64{1, 2, 3}) {
		t.Errorf("zero-scale noise changed the slice to %v", v)
	}
	if got, want := s.Uint64(), noiseRef(3).Uint64(); got != want {
		t.Errorf("after zero-scale noise the next draw is %x, the stream's first is %x", got, want)
	}
}

// ksStatistic returns the Kolmogorov–Smirnov distance between the sample x (sorted in
// place) and the distribution function cdf.
func ksStatistic(x []float64, cdf func(float64) float64) float64 {
	slices.Sort(x)
	n := float64(len(x))
	d := 0.0
	for i, v := range x {
		f := cdf(v)
		d = max(d, float64(i+1)/n-f, f-float64(i)/n)
	}
	return d
}

// The noise has the distribution it claims: Kolmogorov–Smirnov against the closed-form
// distribution functions, and the first moments against their sampling error. With
// n = 40000 draws, √n·D exceeds 1.95 with probability 0.001 under the null (Kolmogorov's
// limit law); each moment bound is ≥ 4.5 standard errors. The seeds are fixed, so the test
// is deterministic; the bounds say how surprising a failure would be.
func TestNoiseDistributions(t *testing.T) {
	const n = 40000
	ksBound := 1.95 / math.Sqrt(n)

	const std = 2.5
	g := make([]float64, n)
	NewSeeded(1, Noise).AddGaussian(g, std)
	var sum, sumSq float64
	for _, x := range g {
		sum += x
		sumSq += x * x
	}
	mean, variance := sum/n, sumSq/n
	// se(mean) = std/√n = 0.0125; se(Σx²/n) = std²·√(2/n) ≈ 0.0442.
	if math.Abs(mean) > 4.5*std/math.Sqrt(n) {
		t.Errorf("Gaussian mean %v, want 0 ± %v", mean, 4.5*std/math.Sqrt(n))
	}
	if math.Abs(variance-std*std) > 4.5*std*std*math.Sqrt(2.0/n) {
		t.Errorf("Gaussian E X² = %v, want std² = %v", variance, std*std)
	}
	normalCDF := func(x float64) float64 { return 0.5 * math.Erfc(-x/(std*math.Sqrt2)) }
	if d := ksStatistic(g, normalCDF); d > ksBound {
		t.Errorf("Gaussian: KS distance %v to N(0, %v²), above %v", d, std, ksBound)
	}

	const b = 0.4
	l := make([]float64, n)
	NewSeeded(2, Noise).AddLaplace(l, b)
	var sumAbs float64
	sum, sumSq = 0, 0
	for _, x := range l {
		sum += x
		sumSq += x * x
		sumAbs += math.Abs(x)
	}
	// Laplace(b): E X = 0 (sd b√2), E|X| = b (sd b), E X² = 2b² (sd b²√20, as E X⁴ = 24b⁴).
	se := func(sd float64) float64 { return 4.5 * sd / math.Sqrt(n) }
	if mean := sum / n; math.Abs(mean) > se(b*math.Sqrt2) {
		t.Errorf("Laplace mean %v, want 0 ± %v", mean, se(b*math.Sqrt2))
	}
	if meanAbs := sumAbs / n; math.Abs(meanAbs-b) > se(b) {
		t.Errorf("Laplace E|X| = %v, want b = %v ± %v (b read as a standard deviation gives b/√2)", meanAbs, b, se(b))
	}
	if m2 := sumSq / n; math.Abs(m2-2*b*b) > se(b*b*math.Sqrt(20)) {
		t.Errorf("Laplace E X² = %v, want 2b² = %v ± %v", m2, 2*b*b, se(b*b*math.Sqrt(20)))
	}
	laplaceCDF := func(x float64) float64 {
		if x < 0 {
			return 0.5 * math.Exp(x/b)
		}
		return 1 - 0.5*math.Exp(-x/b)
	}
	if d := ksStatistic(l, laplaceCDF); d > ksBound {
		t.Errorf("Laplace: KS distance %v to Laplace(%v), above %v", d, b, ksBound)
	}
}

// The KS check has power: Gaussian noise with the standard deviation b√2 of Laplace(b)
// (the same variance) is rejected as Laplace(b), and Laplace with b read as a standard
// deviation (scale b/√2) is rejected too.
func TestNoiseDistributionsKSRejects(t *testing.T) {
	const n, b = 40000, 0.4
	ksBound := 1.95 / math.Sqrt(n)
	laplaceCDF := func(x float64) float64 {
		if x < 0 {
			return 0.5 * math.Exp(x/b)
		}
		return 1 - 0.5*math.Exp(-x/b)
	}
	g := make([]float64, n)
	NewSeeded(3, Noise).AddGaussian(g, b*math.Sqrt2)
	if d := ksStatistic(g, laplaceCDF); d <= ksBound {
		t.Errorf("Gaussian of Laplace's variance passes as Laplace: KS %v ≤ %v", d, ksBound)
	}
	l := make([]float64, n)
	NewSeeded(4, Noise).AddLaplace(l, b/math.Sqrt2)
	if d := ksStatistic(l, laplaceCDF); d <= ksBound {
		t.Errorf("Laplace(b/√2) passes as Laplace(b): KS %v ≤ %v", d, ksBound)
	}
}
