package audit

import (
	"math"
	"math/big"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// bigTail is P[Binomial(n, p) ≥ v] summed term by term with exact binomial coefficients
// in 256-bit floating point: the brute-force reference.
func bigTail(n, v int, p float64) float64 {
	const prec = 256
	bp := new(big.Float).SetPrec(prec).SetFloat64(p)
	bq := new(big.Float).SetPrec(prec).Sub(big.NewFloat(1).SetPrec(prec), bp)
	sum := new(big.Float).SetPrec(prec)
	for k := max(v, 0); k <= n; k++ {
		c := new(big.Float).SetPrec(prec).SetInt(new(big.Int).Binomial(int64(n), int64(k)))
		for range k {
			c.Mul(c, bp)
		}
		for range n - k {
			c.Mul(c, bq)
		}
		sum.Add(sum, c)
	}
	f, _ := sum.Float64()
	return f
}

func TestBinomialTailAgainstBruteForce(t *testing.T) {
	for _, n := range []int{1, 7, 40, 200} {
		for _, p := range []float64{0.5, 0.731, 0.95, 0.999} {
			lp, lq := math.Log(p), math.Log1p(-p)
			for _, v := range []int{0, 1, n / 3, n / 2, 3 * n / 4, n - 1, n} {
				got := math.Exp(logBinomialTail(n, v, lp, lq))
				want := bigTail(n, v, p)
				if math.Abs(got-want) > 1e-12*want+1e-300 {
					t.Errorf("P[Bin(%d, %v) ≥ %d] = %.15g, brute force %.15g", n, p, v, got, want)
				}
			}
		}
	}
}

func TestBinomialTailAgainstGonum(t *testing.T) {
	for _, n := range []int{10, 500, 3000} {
		for _, p := range []float64{0.5, 0.88} {
			d := distuv.Binomial{N: float64(n), P: p}
			lp, lq := math.Log(p), math.Log1p(-p)
			for _, v := range []int{1, n / 2, 9 * n / 10} {
				got := math.Exp(logBinomialTail(n, v, lp, lq))
				want := 1 - d.CDF(float64(v-1))
				if math.Abs(got-want) > 1e-9 {
					t.Errorf("P[Bin(%d, %v) ≥ %d] = %.12g, gonum %.12g", n, p, v, got, want)
				}
			}
		}
	}
}

func TestTailInLogSpaceDoesNotUnderflow(t *testing.T) {
	// 1 − p = 1e-300 would underflow as p^n products; the log tail still gives n·log(p).
	lp, lq := math.Log(0.5), math.Log(0.5)
	if got, want := logBinomialTail(5000, 5000, lp, lq), 5000*math.Log(0.5); math.Abs(got-want) > 1e-9 {
		t.Errorf("log P[Bin(5000, 1/2) = 5000] = %v, want %v", got, want)
	}
}

// With δ = 0 and every guess right the p-value is q^r, q = e^ε/(1+e^ε), so the bound has the
// closed form ε = logit((1−confidence)^{1/r}).
func TestAllCorrectClosedForm(t *testing.T) {
	for _, r := range []int{1, 10, 100, 1000} {
		for _, conf := range []float64{0.9, 0.95, 0.99} {
			p := math.Pow(1-conf, 1/float64(r))
			want := max(0, math.Log(p/(1-p))) // 0 when one right guess is no evidence
			got, err := EpsilonLowerBound(1000, r, r, conf, 0)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > 2e-6 {
				t.Errorf("r = v = %d at %v: bound %.7f, closed form %.7f", r, conf, got, want)
			}
		}
	}
}

// The δ term is the paper's 2mδ·max_i (f(v−i) − f(v))/i; here f comes from the brute-force
// tail and the maximum runs over every i up to m (i > v adds nothing: f(v−i) = 1 there).
func TestPValueDeltaTermAgainstDefinition(t *testing.T) {
	m, r := 60, 40
	for _, eps := range []float64{0.5, 1, 2} {
		q := 1 / (1 + math.Exp(-eps))
		f := func(x int) float64 { return bigTail(r, x, q) }
		for _, v := range []int{20, 30, 38} {
			for _, delta := range []float64{1e-5, 1e-3} {
				var alpha float64
				for i := 1; i <= m; i++ {
					alpha = max(alpha, (f(v-i)-f(v))/float64(i))
				}
				want := min(f(v)+2*float64(m)*delta*alpha, 1)
				if got := PValue(m, r, v, eps, delta); math.Abs(got-want) > 1e-12 {
					t.Errorf("PValue(%d, %d, %d, %v, %v) = %.15g, definition %.15g", m, r, v, eps, delta, got, want)
				}
			}
		}
	}
}

func TestBoundMonotone(t *testing.T) {
	const m, r = 1000, 200
	prev := -1.0
	for v := 100; v <= r; v += 5 {
		b, err := EpsilonLowerBound(m, r, v, 0.95, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if b < prev {
			t.Errorf("bound falls from %v to %v as correct guesses grow to %d", prev, b, v)
		}
		prev = b
	}
	if prev < 2 {
		t.Errorf("200 of 200 correct gives only ε ≥ %v", prev)
	}
	b95, _ := EpsilonLowerBound(m, r, 170, 0.95, 0)
	b99, _ := EpsilonLowerBound(m, r, 170, 0.99, 0)
	bDelta, _ := EpsilonLowerBound(m, r, 170, 0.95, 1e-3)
	if !(b99 < b95) || !(bDelta < b95) {
		t.Errorf("bound at 95%% %v, at 99%% %v, with δ = 1e-3 %v: more confidence or more δ must lower it", b95, b99, bDelta)
	}
	// 100 of 200 right is a coin's accuracy: no evidence of leakage at all.
	if b, _ := EpsilonLowerBound(m, r, 100, 0.95, 0); b != 0 {
		t.Errorf("chance accuracy gives ε ≥ %v, want 0", b)
	}
	// The p-value itself grows with ε for δ = 0.
	prevP := 0.0
	for eps := 0.0; eps <= 6; eps += 0.25 {
		p := PValue(m, r, 150, eps, 0)
		if p < prevP-1e-12 {
			t.Errorf("p-value falls from %v to %v at ε = %v", prevP, p, eps)
		}
		prevP = p
	}
}

func TestEpsilonLowerBoundRejectsBadInput(t *testing.T) {
	for _, c := range []struct {
		m, r, v     int
		conf, delta float64
	}{
		{0, 0, 0, 0.95, 0}, {10, 11, 1, 0.95, 0}, {10, 5, 6, 0.95, 0}, {10, 5, -1, 0.95, 0},
		{10, 5, 3, 1, 0}, {10, 5, 3, 0, 0}, {10, 5, 3, math.NaN(), 0}, {10, 5, 3, 0.95, 1}, {10, 5, 3, 0.95, -1e-9},
	} {
		if _, err := EpsilonLowerBound(c.m, c.r, c.v, c.conf, c.delta); err == nil {
			t.Errorf("EpsilonLowerBound(%+v) accepted bad input", c)
		}
	}
}
