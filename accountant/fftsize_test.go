package accountant

import (
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/dsp/fourier"
)

// gonumFactorCount replays the factor loop of gonum's fftpack rffti1 (try 4,
// 2, 3, 5, then odd numbers from 7; a 2 is moved to the front) and returns how
// many factors it would write into the plan's 15-int array (n and the count
// take two): more than 13 indexes past the array.
func gonumFactorCount(n int) int {
	ntryh := [4]int{4, 2, 3, 5}
	nl, nf := n, 0
	for j, ntry := 0, 0; nl > 1; j++ {
		if j < 4 {
			ntry = ntryh[j]
		} else {
			ntry += 2
		}
		for nl%ntry == 0 {
			nl /= ntry
			nf++
		}
	}
	return nf
}

// newFFTPanics reports whether fourier.NewFFT(n) panics (the library's own
// verdict, independent of the replay above).
func newFFTPanics(n int) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	fourier.NewFFT(n)
	return false
}

func smooth5(n int) bool {
	for _, p := range []int{2, 3, 5} {
		for n%p == 0 {
			n /= p
		}
	}
	return n == 1
}

// The size of issue 23 item 6 (2·3¹³, picked for `privacy epsilon -q 0.1
// -steps 10000 -noise 0.8`) is one gonum cannot plan: the replay and the
// library agree, so the replay is a fair oracle for sizes too big to plan here.
func TestGonumFFTLimit(t *testing.T) {
	bad := 2 * 1594323 // 2·3¹³
	if gonumFactorCount(bad) != 14 || !newFFTPanics(bad) {
		t.Fatalf("2·3¹³: %d factors, NewFFT panics %v; want 14 and a panic", gonumFactorCount(bad), newFFTPanics(bad))
	}
	for _, n := range []int{1 << 20, 3 * 3 * 3 * 3 * 3 * 3 * 3 * 3 * 3 * 3 * 3 * 3 * 3, 2 * 3 * 5 * 7 * 11, 1000, 1} {
		if got, want := newFFTPanics(n), gonumFactorCount(n) > fftMaxFactors; got != want {
			t.Errorf("n=%d: NewFFT panics %v, replay predicts %v", n, got, want)
		}
	}
}

// Property: over many n, fftSize(n) is ≥ n, 5-smooth, plannable by gonum, and
// the smallest such size (checked by brute force for small n).
func TestFFTSizeSupported(t *testing.T) {
	start := time.Now()
	planned := map[int]bool{}
	check := func(n int) int {
		s := fftSize(n)
		if s < n || !smooth5(s) || gonumFactorCount(s) > fftMaxFactors {
			t.Fatalf("fftSize(%d) = %d (%d factors): want a 5-smooth size ≥ n with ≤ %d factors", n, s, gonumFactorCount(s), fftMaxFactors)
		}
		if s <= 1<<17 && !planned[s] {
			planned[s] = true
			if newFFTPanics(s) {
				t.Fatalf("fftSize(%d) = %d: fourier.NewFFT panics", n, s)
			}
		}
		return s
	}
	for n := 1; n <= 5000; n++ {
		s := check(n)
		for m := n; m < s; m++ {
			if smooth5(m) && gonumFactorCount(m) <= fftMaxFactors {
				t.Fatalf("fftSize(%d) = %d, but %d is smaller and supported", n, s, m)
			}
		}
	}
	rng := rand.New(rand.NewPCG(23, 6))
	for range 20000 {
		check(1 + rng.IntN(2*maxPLDGrid))
	}
	// Every neighbour of a 5-smooth size up to twice the grid cap, where a
	// 14-factor size would otherwise win.
	for p3 := 1; p3 <= 2*maxPLDGrid; p3 *= 3 {
		for p35 := p3; p35 <= 2*maxPLDGrid; p35 *= 5 {
			for m := p35; m <= 2*maxPLDGrid; m *= 2 {
				check(m)
				check(m - 1)
				check(m + 1)
			}
		}
	}
	if s := fftSize(2 * 1594323); s == 2*1594323 {
		t.Errorf("fftSize(2·3¹³) = 2·3¹³, which gonum cannot plan")
	}
	t.Logf("%d sizes planned, %v", len(planned), time.Since(start))
}

// Issue 23 item 6: the plan that picked 2·3¹³ composes, and its ε lies below the RDP
// accountant's upper bound and within 10 % of it (8 % on the MNIST plan; here 4.8 %).
// cmd/privacy's TestLongPlanPLD runs it end to end.
func TestPLDLongPlanFFTSize(t *testing.T) {
	if testing.Short() {
		t.Skip("composes a 10,000-step plan")
	}
	h := []Segment{{0.1, 0.8, 10000}}
	p, err := PLD{}.Epsilon(h, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	r, err := RDP{}.Epsilon(h, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !(p.Epsilon <= r.Epsilon && p.Epsilon > 0.9*r.Epsilon) {
		t.Errorf("PLD ε = %v, RDP ε = %v: want 0.9·RDP < PLD ≤ RDP", p.Epsilon, r.Epsilon)
	}
}
