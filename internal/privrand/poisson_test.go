package privrand

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// chiSquareBound is a loose upper bound for a χ² statistic with df degrees of freedom:
// its mean df plus six standard deviations √(2·df), stable for fixed seeds.
func chiSquareBound(df int) float64 { return float64(df) + 6*math.Sqrt(2*float64(df)) }

// TestPoissonMarginals checks the laws that Poisson sampling implies, with a fixed seed
// and bounds of six standard deviations: n = 1,000, q = 0.1, T = 3,000 steps. Each
// example's count is Binomial(T, q); the batch size is Binomial(n, q) with mean nq and
// variance nq(1−q); a pair of examples is included together with probability q², and so
// is one example in two consecutive steps.
func TestPoissonMarginals(t *testing.T) {
	const n, q, steps = 1000, 0.1, 3000
	p, err := NewPoisson(n, q)
	if err != nil {
		t.Fatal(err)
	}
	r := NewSeeded(42, Sampler).Rand()
	counts := make([]int, n)
	prev, cur := make([]bool, n), make([]bool, n)
	adjacent, distant, again := 0, 0, 0
	var sum, sumSq float64
	var buf []int
	for range steps {
		buf = p.Sample(r, buf)
		if !slices.IsSorted(buf) || len(buf) > 0 && (buf[0] < 0 || buf[len(buf)-1] >= n) {
			t.Fatalf("indices not increasing in [0, n): %v", buf)
		}
		clear(cur)
		for _, i := range buf {
			counts[i]++
			cur[i] = true
			if prev[i] {
				again++
			}
		}
		for i := 0; i < n; i += 2 {
			if cur[i] && cur[i+1] {
				adjacent++ // neighbours: one geometric gap apart
			}
		}
		for i := range n / 2 {
			if cur[i] && cur[i+n/2] {
				distant++
			}
		}
		b := float64(len(buf))
		sum += b
		sumSq += b * b
		prev, cur = cur, prev
	}
	sd := math.Sqrt(steps * q * (1 - q))
	for i, c := range counts {
		if math.Abs(float64(c)-steps*q) > 6*sd {
			t.Fatalf("example %d sampled %d times in %d steps, want %v ± %.0f", i, c, steps, steps*q, 6*sd)
		}
	}
	mean, variance := sum/steps, sumSq/steps-(sum/steps)*(sum/steps)
	wantVar := n * q * (1 - q)
	if tol := 6 * math.Sqrt(wantVar/steps); math.Abs(mean-n*q) > tol {
		t.Errorf("mean batch size %v, want nq = %v ± %.2f", mean, n*q, tol)
	}
	// The sample variance of T normal-ish values has standard error σ²·√(2/T).
	if tol := 6 * wantVar * math.Sqrt(2.0/steps); math.Abs(variance-wantVar) > tol {
		t.Errorf("batch-size variance %v, want nq(1−q) = %v ± %.1f", variance, wantVar, tol)
	}
	for _, c := range []struct {
		name   string
		got    int
		trials float64
	}{
		{"neighbouring examples", adjacent, n / 2 * steps},
		{"examples n/2 apart", distant, n / 2 * steps},
		{"an example in consecutive steps", again, n * (steps - 1)},
	} {
		want := c.trials * q * q
		if sd := math.Sqrt(c.trials * q * q * (1 - q*q)); math.Abs(float64(c.got)-want) > 6*sd {
			t.Errorf("%s: %d joint inclusions, want %v ± %.0f", c.name, c.got, want, 6*sd)
		}
	}
}

// TestPoissonJointLaw: with n = 4 examples every subset S has probability
// q^|S|·(1−q)^(4−|S|) under independent inclusion; a χ² test over the 16 subsets
// (15 degrees of freedom) checks the whole joint law, not only pairs.
func TestPoissonJointLaw(t *testing.T) {
	const n, steps = 4, 50000
	for _, q := range []float64{0.3, 0.8} {
		p, _ := NewPoisson(n, q)
		r := NewSeeded(7, Sampler).Rand()
		var freq [1 << n]int
		var buf []int
		for range steps {
			buf = p.Sample(r, buf)
			mask := 0
			for _, i := range buf {
				mask |= 1 << i
			}
			freq[mask]++
		}
		chi := 0.0
		for mask, f := range freq {
			k := popcount(mask)
			e := steps * math.Pow(q, float64(k)) * math.Pow(1-q, float64(n-k))
			chi += (float64(f) - e) * (float64(f) - e) / e
		}
		if chi > chiSquareBound(15) {
			t.Errorf("q = %v: χ² = %.1f over the 16 subsets, above %.1f", q, chi, chiSquareBound(15))
		}
	}
}

func popcount(x int) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

// TestPoissonBatchSizeLaw: a χ² test of the batch size against the Binomial(n, q)
// probabilities, computed here from the closed form C(n,k) q^k (1−q)^(n−k); cells with
// fewer than 5 expected counts are merged into their neighbours.
func TestPoissonBatchSizeLaw(t *testing.T) {
	const n, q, steps = 40, 0.25, 40000
	p, _ := NewPoisson(n, q)
	r := NewSeeded(3, Sampler).Rand()
	freq := make([]float64, n+1)
	var buf []int
	for range steps {
		buf = p.Sample(r, buf)
		freq[len(buf)]++
	}
	var chi float64
	var obs, exp float64
	df := -1
	for k := 0; k <= n; k++ {
		lg, _ := math.Lgamma(n + 1)
		lk, _ := math.Lgamma(float64(k) + 1)
		lnk, _ := math.Lgamma(float64(n-k) + 1)
		obs += freq[k]
		exp += steps * math.Exp(lg-lk-lnk+float64(k)*math.Log(q)+float64(n-k)*math.Log(1-q))
		if exp >= 5 || k == n {
			chi += (obs - exp) * (obs - exp) / exp
			obs, exp = 0, 0
			df++
		}
	}
	if chi > chiSquareBound(df) {
		t.Errorf("batch sizes: χ² = %.1f with %d degrees of freedom, above %.1f", chi, df, chiSquareBound(df))
	}
}

// TestPoissonLargeN: n = 10⁹ examples at q = 10⁻⁷ (expected batch 100) costs only the
// batch, and the batch size keeps mean nq.
func TestPoissonLargeN(t *testing.T) {
	const n, q, steps = 1_000_000_000, 1e-7, 400
	p, _ := NewPoisson(n, q)
	r := NewSeeded(5, Sampler).Rand()
	var sum float64
	var buf []int
	for range steps {
		buf = p.Sample(r, buf)
		sum += float64(len(buf))
		if len(buf) > 0 && buf[len(buf)-1] >= n {
			t.Fatalf("index %d ≥ n", buf[len(buf)-1])
		}
	}
	if mean, tol := sum/steps, 6*math.Sqrt(n*q/steps); math.Abs(mean-n*q) > tol {
		t.Errorf("mean batch %v, want %v ± %.1f", mean, n*q, tol)
	}
}

func TestPoissonEdges(t *testing.T) {
	r := NewSeeded(1, Sampler).Rand()
	all := func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		return s
	}
	for _, c := range []struct {
		n    int
		q    float64
		want []int // nil: only check the range
	}{
		{10, 0, []int{}},
		{10, 1, all(10)},
		{0, 0.5, []int{}},
		{1, 1, []int{0}},
		{1000, 5e-324, []int{}}, // ln(1−q) = −5e-324: every skip is +Inf
		{1000, 1e-300, []int{}},
		{1000, math.Nextafter(1, 0), nil}, // 1 − 2⁻⁵³
		{1000, 0.5, nil},
	} {
		p, err := NewPoisson(c.n, c.q)
		if err != nil {
			t.Fatal(err)
		}
		buf := []int{-7, -7} // Sample must start from buf[:0]
		for range 50 {
			buf = p.Sample(r, buf)
			if c.want != nil && !slices.Equal(buf, c.want) {
				t.Fatalf("n = %d, q = %v: sampled %v, want %v", c.n, c.q, buf, c.want)
			}
			for j, i := range buf {
				if i < 0 || i >= c.n || j > 0 && i <= buf[j-1] {
					t.Fatalf("n = %d, q = %v: indices %v not increasing in [0, n)", c.n, c.q, buf)
				}
			}
		}
	}
	for _, c := range []struct {
		n int
		q float64
	}{{-1, 0.5}, {10, -0.1}, {10, 1.5}, {10, math.NaN()}, {10, math.Inf(1)}} {
		if _, err := NewPoisson(c.n, c.q); err == nil {
			t.Errorf("NewPoisson(%d, %v) succeeded", c.n, c.q)
		}
	}
}

// BenchmarkPoisson: one step at the same expected batch q·n = 256 for n = 60,000 and
// n = 600,000. Geometric skipping makes both cost the same (about 256 draws and
// logarithms); a Bernoulli draw per example would make the second ten times slower.
func BenchmarkPoisson(b *testing.B) {
	for _, n := range []int{60000, 600000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			p, _ := NewPoisson(n, 256/float64(n))
			r := NewSeeded(1, Sampler).Rand()
			buf := make([]int, 0, 512)
			b.ReportAllocs()
			for b.Loop() {
				buf = p.Sample(r, buf)
			}
		})
	}
}

// TestPoissonBatchBound checks the bound against upper tails summed from the top with the
// pmf recurrence P(k−1) = P(k)·k(1−q)/((n−k+1)q), an independent computation.
func TestPoissonBatchBound(t *testing.T) {
	for _, c := range []struct {
		n    int
		q    float64
		tail float64
	}{{120, 10.0 / 120, 1e-6}, {60, 1.0 / 60, 1e-6}, {1000, 0.1, 1e-6}, {2, 0.5, 1e-6}, {5000, 0.01, 1e-6}, {8000, 256.0 / 8000, 1e-6}, {300, 0.5, 1e-3}} {
		p, err := NewPoisson(c.n, c.q)
		if err != nil {
			t.Fatal(err)
		}
		b := p.BatchBound(c.tail)
		upper := make([]float64, c.n+1) // upper[k] = P(X > k)
		lp := float64(c.n) * math.Log(c.q)
		for k := c.n; k >= 1; k-- {
			upper[k-1] = upper[k] + math.Exp(lp)
			lp += math.Log(float64(k)*(1-c.q)) - math.Log(float64(c.n-k+1)*c.q)
		}
		if upper[b] > c.tail || (b > 0 && upper[b-1] <= c.tail) {
			t.Errorf("n = %d, q = %v: bound %d, P(X > b) = %.3g, P(X > b−1) = %.3g, tail %g", c.n, c.q, b, upper[b], upper[max(b-1, 0)], c.tail)
		}
	}
	for _, c := range []struct {
		n    int
		q    float64
		want int
	}{{10, 1, 10}, {10, 0, 0}, {0, 0.5, 0}} {
		p, _ := NewPoisson(c.n, c.q)
		if got := p.BatchBound(1e-6); got != c.want {
			t.Errorf("n = %d, q = %v: bound %d, want %d", c.n, c.q, got, c.want)
		}
	}
}
