package accountant

import (
	"errors"
	"math"
	"testing"
)

// Oracles for the seed-paper calibrations (seeds digest §1.4, §3.3, §4.6,
// §7 items 3, 8, 9), plus values computed by hand from the printed formulas.

func TestLSSGDTheorem1Noise(t *testing.T) {
	// Digest §1.4: n = 60000, T = 50 epochs × 469 = 23450, δ = 1e-5, μ = 0.5.
	theorem := []float64{0.7762, 0.5181, 0.3890, 0.3115, 0.2599}
	code := []float64{0.3471, 0.2316, 0.1739, 0.1393, 0.1162}
	for k, eps := range []float64{0.10, 0.15, 0.20, 0.25, 0.30} {
		nu, err := LSSGDTheorem1Noise(23450, 60000, 1, eps, 1e-5, 0.5)
		if err != nil || math.Abs(nu-theorem[k]) > 0.00005 {
			t.Errorf("Theorem 1, ε = %v: ν = %.5f (%v), digest %v", eps, nu, err, theorem[k])
		}
		nuCode, err := LSSGDCodeNoise(23450, 60000, eps, 1e-5, 0.5)
		// One unit in the last digit: the code's 0.2316 is 0.23168 truncated.
		if err != nil || math.Abs(nuCode-code[k]) > 0.0001 {
			t.Errorf("authors' code, ε = %v: ν = %.5f (%v), digest %v", eps, nuCode, err, code[k])
		}
		// The code variant is Theorem 1 with G = 1/√5.
		if g, _ := LSSGDTheorem1Noise(23450, 60000, 1/math.Sqrt(5), eps, 1e-5, 0.5); !closeRel(g, nuCode, 1e-14) {
			t.Errorf("ε = %v: G = 1/√5 gives %v, code variant %v", eps, g, nuCode)
		}
	}
	// ν scales linearly in G.
	a, _ := LSSGDTheorem1Noise(100, 1000, 1, 1, 1e-5, 0.3)
	b, _ := LSSGDTheorem1Noise(100, 1000, 2.5, 1, 1e-5, 0.3)
	if !closeRel(b, 2.5*a, 1e-14) {
		t.Errorf("ν(G=2.5) = %v, want 2.5·ν(G=1) = %v", b, 2.5*a)
	}
}

func TestLSSGDTheorem1Conditions(t *testing.T) {
	// The paper's logistic regression setting (b = 128) violates the first
	// condition: its right side is log(0.19) < 0 at μ = 0.5 (digest §1.4),
	// and log(μn³ε/(5b³Tα)) < 0 for every μ since α ≥ log(1/δ)/ε + 1.
	for _, eps := range []float64{0.1, 0.3} {
		for mu := 0.05; mu < 1; mu += 0.05 {
			err := LSSGDTheorem1Conditions(23450, 60000, 128, eps, 1e-5, mu)
			if !errors.Is(err, ErrInvalidParameter) {
				t.Errorf("ε = %v μ = %.2f: conditions reported feasible (%v)", eps, mu, err)
			}
		}
	}
	// A feasible setting worked out by hand: n = 1e4, b = 1, ε = 10, δ = 1e-5,
	// μ = 0.5 give α = 3.3026; with T = 5e7 the first condition's right side
	// is log(3772) = 8.24 ≥ α and the second is 1.65 ≥ 1.5.
	if err := LSSGDTheorem1Conditions(50_000_000, 10000, 1, 10, 1e-5, 0.5); err != nil {
		t.Errorf("feasible setting rejected: %v", err)
	}
	// With T = 4e7 the second condition gives 1.32 < 1.5.
	if err := LSSGDTheorem1Conditions(40_000_000, 10000, 1, 10, 1e-5, 0.5); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("second condition not detected: %v", err)
	}
	for _, bad := range []struct {
		steps, n, batch int
		eps, delta, mu  float64
	}{{0, 10, 1, 1, 1e-5, 0.5}, {10, 0, 1, 1, 1e-5, 0.5}, {10, 10, 0, 1, 1e-5, 0.5}, {10, 10, 11, 1, 1e-5, 0.5},
		{10, 10, 1, 0, 1e-5, 0.5}, {10, 10, 1, 1, 0, 0.5}, {10, 10, 1, 1, 1e-5, 0}, {10, 10, 1, 1, 1e-5, 1}} {
		if err := LSSGDTheorem1Conditions(bad.steps, bad.n, bad.batch, bad.eps, bad.delta, bad.mu); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := LSSGDTheorem1Noise(10, 10, 0, 1, 1e-5, 0.5); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("G = 0: %v", err)
	}
}

func TestGaussianSigma(t *testing.T) {
	// σ = √(2 log(1.25/δ))·Δ/ε, evaluated by hand.
	for _, c := range []struct{ eps, delta, sens, want float64 }{
		{0.5, 1e-5, 1, 9.689610525210778},
		{0.9, 1e-6, 2.5, 14.718895907917982},
	} {
		got, err := GaussianSigma(c.eps, c.delta, c.sens)
		if err != nil || !closeRel(got, c.want, 1e-14) {
			t.Errorf("GaussianSigma(%v, %v, %v) = %v, %v; want %v", c.eps, c.delta, c.sens, got, err, c.want)
		}
	}
	for _, c := range [][3]float64{{1, 1e-5, 1}, {0, 1e-5, 1}, {0.5, 0, 1}, {0.5, 1e-5, 0}, {0.5, 1e-5, math.NaN()}} {
		if _, err := GaussianSigma(c[0], c[1], c[2]); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("GaussianSigma(%v): %v", c, err)
		}
	}
}

func TestExtendedAdvancedComposition(t *testing.T) {
	// Homogeneous: Dwork–Rothblum–Vadhan with k = 100, ε₀ = 0.1, δ₀ = 1e-6,
	// δ' = 1e-5, evaluated by hand: ε = √(2k ε₀² log 1e5) + kε₀ tanh(ε₀/2).
	eps := make([]float64, 100)
	deltas := make([]float64, 100)
	for i := range eps {
		eps[i], deltas[i] = 0.1, 1e-6
	}
	e, d, err := ExtendedAdvancedComposition(eps, deltas, 1e-5)
	if err != nil || !closeRel(e, 5.2981096617668815, 1e-13) || !closeRel(d, 0.00010999505016455856, 1e-10) {
		t.Errorf("homogeneous: (%v, %v), %v", e, d, err)
	}
	// Heterogeneous, by hand.
	e, d, err = ExtendedAdvancedComposition([]float64{0.1, 0.2, 0.3, 0.4}, []float64{1e-6, 2e-6, 3e-6, 4e-6}, 1e-3)
	if err != nil || !closeRel(e, 2.18438720192227, 1e-13) || !closeRel(d, 0.0010099999650000626, 1e-12) {
		t.Errorf("heterogeneous: (%v, %v), %v", e, d, err)
	}
	for _, c := range []struct {
		eps, deltas []float64
		dp          float64
	}{
		{nil, nil, 1e-5}, {[]float64{0.1}, []float64{1e-6, 1e-6}, 1e-5}, {[]float64{1}, []float64{1e-6}, 1e-5},
		{[]float64{0.1}, []float64{0}, 1e-5}, {[]float64{0.1}, []float64{1e-6}, 0}, {[]float64{math.NaN()}, []float64{1e-6}, 1e-5},
	} {
		if _, _, err := ExtendedAdvancedComposition(c.eps, c.deltas, c.dp); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

func ones(n int) []float64 {
	a := make([]float64, n)
	for i := range a {
		a[i] = 1
	}
	return a
}

func TestADPBDelta(t *testing.T) {
	// Digest §3.3 oracles (m = 256, n = 50000, δ = 1e-5).
	for _, c := range []struct {
		steps int
		want  float64
	}{{11760, 215.7485}, {23520, 223.8834}, {39200, 229.8784}, {11700, 215.6885}} {
		got, err := ADPBDelta(c.steps, 256, 50000, 1e-5)
		if err != nil || math.Abs(got-c.want) > 0.00005 {
			t.Errorf("B_δ(T=%d) = %.5f (%v), digest %v", c.steps, got, err, c.want)
		}
	}
	if _, err := ADPBDelta(1, 1, 1000000, 0.5); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("B_δ ≤ 0 not rejected: %v", err)
	}
}

// TestADPNoiseDigest: the DP-SGD noise of the ADP paper's Theorem A.1 at its
// CIFAR setting (digest §3.3 and §7 item 8), and the RDP ε that the digest
// computed for those noise multipliers with TF Privacy.
func TestADPNoiseDigest(t *testing.T) {
	sigma, err := ADPNoise(ones(11700), 50000, 256, 1, 16*0.8, 1e-5)
	if err != nil || math.Abs(sigma-0.03971) > 0.000005 || math.Abs(sigma*256-10.1668) > 0.00005 {
		t.Errorf("σ = %.6f, multiplier %.5f (%v); digest 0.03971, 10.1668", sigma, sigma*256, err)
	}
	for _, c := range []struct {
		epsBar         float64
		batch          int     // 256: appendix B_δ; 1: main-text B_δ
		z, rdpEpsilon  float64 // digest: multiplier and its RDP ε (classic, TF orders)
		zUnit, epsUnit float64
	}{
		{0.8, 256, 10.17, 0.280, 0.01, 0.001},
		{1.2, 256, 6.78, 0.399, 0.01, 0.001},
		{1.6, 256, 5.08, 0.536, 0.01, 0.001},
		{3.2, 256, 2.54, 1.123, 0.01, 0.001},
		{6.4, 256, 1.27, 2.657, 0.01, 0.001},
		{0.8, 1, 8.50, 0.321, 0.01, 0.001},
		{1.2, 1, 5.66, 0.480, 0.01, 0.001},
		{1.6, 1, 4.25, 0.647, 0.01, 0.001},
		{3.2, 1, 2.12, 1.378, 0.01, 0.001},
		{6.4, 1, 1.06, 3.519, 0.01, 0.001},
	} {
		b, _ := ADPBDelta(11700, c.batch, 50000, 1e-5)
		// σ of Theorem A.1 with the chosen B_δ; the multiplier is σ·m/C_G.
		sigma := 16 * math.Sqrt(b*11700) / (50000 * 16 * c.epsBar)
		if c.batch == 256 {
			s, err := ADPNoise(ones(11700), 50000, 256, 1, 16*c.epsBar, 1e-5)
			if err != nil || !closeRel(s, sigma, 1e-12) {
				t.Fatalf("ADPNoise = %v (%v), formula %v", s, err, sigma)
			}
		}
		z := sigma * 256
		if math.Abs(z-c.z) > c.zUnit/2 {
			t.Errorf("ε̄ = %v, m = %d: z = %.4f, digest %v", c.epsBar, c.batch, z, c.z)
		}
		s := epsilonOf(t, 256.0/50000, z, 11700, 1e-5, WithConversion(Classic))
		if math.Abs(s.Epsilon-c.rdpEpsilon) > c.epsUnit/2 {
			t.Errorf("ε̄ = %v, m = %d: RDP ε = %.4f, digest %v", c.epsBar, c.batch, s.Epsilon, c.rdpEpsilon)
		}
	}
}

func TestADPNoiseSchedule(t *testing.T) {
	// σ² ∝ Σ 1/α_t²: α_t² = t gives Σ 1/t, a harmonic number.
	const steps = 1000
	alphas := make([]float64, steps)
	harmonic := 0.0
	for i := range alphas {
		alphas[i] = math.Sqrt(float64(i + 1))
		harmonic += 1 / float64(i+1)
	}
	adp, err := ADPNoise(alphas, 50000, 256, 1, 4, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ADPBDelta(steps, 256, 50000, 1e-5)
	if want := 16 * math.Sqrt(b*harmonic) / (50000 * 4); !closeRel(adp, want, 1e-13) {
		t.Errorf("σ = %v, want %v", adp, want)
	}
	for _, bad := range [][]float64{nil, {1, 0}, {1, math.NaN()}, {-1}} {
		if _, err := ADPNoise(bad, 50000, 256, 1, 4, 1e-5); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("alphas %v: %v", bad, err)
		}
	}
}

func TestADPConditions(t *testing.T) {
	// At the digest's CIFAR setting the per-step ε_t = (2/m)√(2 log(1.25/δ))/σ
	// = (2/256)·4.8448/0.03971 ≈ 0.953 ≤ 1 with ε = 16·0.8 …
	if err := ADPConditions(ones(11700), 50000, 256, 16*0.8, 1e-5); err != nil {
		t.Errorf("ε̄ = 0.8: %v", err)
	}
	// … and about 7.6 > 1 at ε = 16·6.4.
	if err := ADPConditions(ones(11700), 50000, 256, 16*6.4, 1e-5); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("ε̄ = 6.4: %v, want a per-step ε > 1 error", err)
	}
	if err := ADPConditions(ones(10), 500, 250, 1, 1e-5); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("m = n/2: %v", err)
	}
}

func TestGaussianZCDP(t *testing.T) {
	// By hand: ρ* = (√(log 1e5 + 1) − √(log 1e5))², σ = G√(2T/ρ*)/n.
	sigma, err := GaussianZCDPSigma(1, 1e-5, 100, 1000, 2)
	if err != nil || !closeRel(sigma, 0.19602220674513648, 1e-13) {
		t.Errorf("σ = %v (%v), want 0.19602220674513648", sigma, err)
	}
	for _, c := range []struct {
		eps, delta float64
		steps, n   int
		g          float64
	}{{1, 1e-5, 100, 1000, 2}, {0.01, 1e-8, 5000, 60000, 1}, {8, 1e-3, 1, 10, 0.3}} {
		s, err := GaussianZCDPSigma(c.eps, c.delta, c.steps, c.n, c.g)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ZCDPEpsilon(s, c.delta, c.steps, c.n, c.g)
		if err != nil || !closeRel(back, c.eps, 1e-12) {
			t.Errorf("%+v: σ = %v gives back ε = %v (%v)", c, s, back, err)
		}
		// The RDP ledger (q = 1, z = σ/(2G/n), classic conversion) computes
		// min over α of ρα + log(1/δ)/(α − 1), whose continuous minimum is
		// exactly ρ + 2√(ρ log(1/δ)): on a dense grid it lies just above.
		var orders []float64
		for a := 1.0005; a < 1e4; a *= 1.0005 {
			orders = append(orders, a)
		}
		l := epsilonOf(t, 1, s*float64(c.n)/(2*c.g), c.steps, c.delta, WithOrders(orders), WithConversion(Classic))
		if l.Epsilon < c.eps*(1-1e-12) || l.Epsilon > c.eps*(1+1e-5) {
			t.Errorf("%+v: ledger ε = %v, zCDP ε = %v", c, l.Epsilon, c.eps)
		}
	}
	for _, c := range []struct {
		v, delta float64
		steps, n int
		g        float64
	}{{0, 1e-5, 1, 1, 1}, {1, 0, 1, 1, 1}, {1, 1e-5, 0, 1, 1}, {1, 1e-5, 1, 0, 1}, {1, 1e-5, 1, 1, 0}, {math.NaN(), 1e-5, 1, 1, 1}} {
		if _, err := GaussianZCDPSigma(c.v, c.delta, c.steps, c.n, c.g); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("GaussianZCDPSigma(%+v): %v", c, err)
		}
		if _, err := ZCDPEpsilon(c.v, c.delta, c.steps, c.n, c.g); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("ZCDPEpsilon(%+v): %v", c, err)
		}
	}
}
