package accountant

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// The tests below write the theorems of Papernot and Steinke, "Hyperparameter
// Tuning with Renyi Differential Privacy" (ICLR 2022, arXiv:2110.03620) out
// again, for a Gaussian trial whose RDP is ρλ (ρ = 1/(2σ²)), and check
// TuningRDP against them; against the closed forms of the paper's Corollaries
// 3 and 4 (as dp_accounting's rdp_privacy_accountant_test.py checks its
// implementation); and against the exact Rényi divergence of a small search
// enumerated outcome by outcome.

// tuningOrders is a grid of orders for the tests: dense near 1, up to 256.
func tuningOrders() []float64 {
	var o []float64
	for a := 1.05; a < 3; a += 0.05 {
		o = append(o, a)
	}
	for a := 3.0; a <= 256; a *= 1.1 {
		o = append(o, a)
	}
	return o
}

func gaussianCurve(orders []float64, sigma float64) []float64 {
	r := make([]float64, len(orders))
	for i, a := range orders {
		r[i] = a / (2 * sigma * sigma)
	}
	return r
}

// suffixMin lowers each value to the least of the values at orders at least
// as large (RDP is non-decreasing in the order); orders are ascending.
func suffixMin(v []float64) []float64 {
	out := append([]float64(nil), v...)
	for i := len(out) - 2; i >= 0; i-- {
		out[i] = math.Min(out[i], out[i+1])
	}
	return out
}

func tuneClose(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// TestTuningRDPNegativeBinomialGaussian: Theorem 2 written out, for the
// logarithmic (η = 0), η = 0.5, geometric (η = 1) and η = 2 distributions.
func TestTuningRDPNegativeBinomialGaussian(t *testing.T) {
	orders := tuningOrders()
	for _, eta := range []float64{-0.5, 0, 0.5, 1, 2} {
		for _, gamma := range []float64{0.01, 0.1, 0.5} {
			for _, sigma := range []float64{0.7, 2, 8} {
				d, err := NegativeBinomialTrials(eta, gamma)
				if err != nil {
					t.Fatal(err)
				}
				trial := gaussianCurve(orders, sigma)
				got, err := TuningRDP(d, orders, trial, Balle)
				if err != nil {
					t.Fatal(err)
				}
				// E[K] by the paper's formulas (Section 2).
				meanK := eta * (1 - gamma) / (gamma * (1 - math.Pow(gamma, eta)))
				if eta == 0 {
					meanK = (1/gamma - 1) / math.Log(1/gamma)
				}
				rho := 1 / (2 * sigma * sigma)
				want := make([]float64, len(orders))
				for i, l := range orders {
					best := math.Inf(1)
					for _, lh := range orders { // λ̂ free: the bound holds for each
						v := rho*l + (1+eta)*(1-1/lh)*rho*lh + (1+eta)*math.Log(1/gamma)/lh + math.Log(meanK)/(l-1)
						best = math.Min(best, v)
					}
					want[i] = best
				}
				want = suffixMin(want)
				for i := range orders {
					if !tuneClose(got[i], want[i], 1e-12) {
						t.Fatalf("η=%v γ=%v σ=%v order %v: TuningRDP = %.15g, Theorem 2 = %.15g", eta, gamma, sigma, orders[i], got[i], want[i])
					}
				}
			}
		}
	}
}

// TestTuningRDPCorollary4: for a ρ-zCDP trial (Gaussian, RDP ρλ) with
// ρ ≤ log(1/γ), the optimal λ̂ = √(log(1/γ)/ρ) gives the closed form of the
// paper's Corollary 4, ε′(λ) = ρ(λ−1) + log E[K]/(λ−1) + 2(1+η)√(ρ·log(1/γ))
// − ηρ, and below λ* = 1 + √(log E[K]/ρ) its minimum over λ,
// 2√(ρ·log E[K]) + 2(1+η)√(ρ·log(1/γ)) − ηρ (dp_accounting's test
// test_repeat_select_gaussian_negative_binomial asserts the same).
func TestTuningRDPCorollary4(t *testing.T) {
	for _, c := range []struct{ rho, gamma, eta float64 }{
		{0.01, 0.01, 0}, {1, 0.1, 0}, {0.01, 0.01, 0.5}, {1, 0.1, 0.5}, {0.01, 0.01, 1}, {1, 0.1, 1}, {0.05, 0.02, 5},
	} {
		d, err := NegativeBinomialTrials(c.eta, c.gamma)
		if err != nil {
			t.Fatal(err)
		}
		meanK := d.Mean()
		lhat := math.Sqrt(math.Log(1/c.gamma) / c.rho)
		lstar := 1 + math.Sqrt(math.Log(meanK)/c.rho)
		orders := []float64{1.1, 2, 3, 5, 10, 100, 1000, 10000}
		if lhat > 1 {
			orders = append(orders, lhat)
		}
		orders = append(orders, lstar)
		trial := make([]float64, len(orders))
		for i, a := range orders {
			trial[i] = c.rho * a
		}
		got, err := TuningRDP(d, orders, trial, Balle)
		if err != nil {
			t.Fatal(err)
		}
		floor := 2*math.Sqrt(c.rho*math.Log(1/c.gamma))*(1+c.eta) - c.eta*c.rho
		for i, l := range orders {
			want := c.rho*(l-1) + math.Log(meanK)/(l-1) + floor
			if l <= lstar {
				want = 2*math.Sqrt(c.rho*math.Log(meanK)) + floor
			}
			if !tuneClose(got[i], want, 1e-9) {
				t.Errorf("%+v order %v: TuningRDP = %.12g, Corollary 4 = %.12g", c, l, got[i], want)
			}
		}
	}
}

// TestTuningRDPCorollary3: an ε-DP trial (RDP ≤ ε at every order) gives a
// (2+η)ε-DP search at orders → ∞ (Corollary 3 of the paper); at the order
// 2^20 the terms in 1/λ are below 1e−4.
func TestTuningRDPCorollary3(t *testing.T) {
	for _, eta := range []float64{0, 0.5, 1, 2, 5} {
		for _, eps := range []float64{0.1, 1, 3} {
			d, err := NegativeBinomialTrials(eta, 0.001)
			if err != nil {
				t.Fatal(err)
			}
			got, err := TuningRDP(d, []float64{MaxOrder}, []float64{eps}, Balle)
			if err != nil {
				t.Fatal(err)
			}
			if want := (2 + eta) * eps; math.Abs(got[0]-want) > 1e-4 || got[0] < want*(1-1e-6) {
				t.Errorf("η=%v ε=%v: TuningRDP at order 2^20 = %.8g, Corollary 3 (2+η)ε = %.8g", eta, eps, got[0], want)
			}
		}
	}
}

// TestTuningRDPPoissonGaussian: Theorem 6 written out. δ̂ is the Gaussian
// trial's δ at ε̂ = log(1 + 1/(λ−1)) by the Balle et al. conversion of its RDP
// curve, δ̂ = min_α exp((α−1)(ρα − ε̂ + log(1 − 1/α)) − log α). It is also
// checked against the bound with the exact δ(ε̂) of the Gaussian mechanism
// (Balle and Wang 2018), which is what dp_accounting's
// test_repeat_and_select_gaussian_poisson uses: an RDP conversion's δ̂ is never
// below the exact one, so TuningRDP must not fall below that bound.
func TestTuningRDPPoissonGaussian(t *testing.T) {
	orders := tuningOrders()
	for _, mu := range []float64{1, 2, 8, 30} {
		for _, sigma := range []float64{1, 3, 10} {
			d, err := PoissonTrials(mu)
			if err != nil {
				t.Fatal(err)
			}
			got, err := TuningRDP(d, orders, gaussianCurve(orders, sigma), Balle)
			if err != nil {
				t.Fatal(err)
			}
			rho := 1 / (2 * sigma * sigma)
			want := make([]float64, len(orders))
			exact := make([]float64, len(orders))
			for i, l := range orders {
				epsHat := math.Log(1 + 1/(l-1))
				deltaHat := math.Inf(1)
				for _, a := range orders {
					deltaHat = math.Min(deltaHat, math.Exp((a-1)*(rho*a-epsHat+math.Log(1-1/a))-math.Log(a)))
				}
				deltaHat = math.Min(deltaHat, 1)
				want[i] = rho*l + mu*deltaHat + math.Log(mu)/(l-1)
				x := (epsHat*sigma - 0.5/sigma) / math.Sqrt2
				y := (epsHat*sigma + 0.5/sigma) / math.Sqrt2
				exactDelta := math.Erfc(x)/2 - math.Exp(epsHat)*math.Erfc(y)/2
				exact[i] = rho*l + mu*exactDelta + math.Log(mu)/(l-1)
			}
			want, exact = suffixMin(want), suffixMin(exact)
			for i := range orders {
				if !tuneClose(got[i], want[i], 1e-9) {
					t.Fatalf("μ=%v σ=%v order %v: TuningRDP = %.15g, Theorem 6 = %.15g", mu, sigma, orders[i], got[i], want[i])
				}
				if got[i] < exact[i]*(1-1e-12) {
					t.Fatalf("μ=%v σ=%v order %v: TuningRDP = %.15g below the bound with the exact Gaussian δ̂, %.15g", mu, sigma, orders[i], got[i], exact[i])
				}
			}
		}
	}
}

// tnbPMF is P[K = k] of Definition 1 of the paper, by the Gamma function:
// Π_{ℓ<k} (ℓ+η)/(ℓ+1) = Γ(k+η)/(Γ(η)·k!) for η ≠ 0, and 1/k at η = 0 after
// dividing γ^(−η) − 1 by η.
func tnbPMF(eta, gamma float64, k int) float64 {
	if eta == 0 {
		return math.Pow(1-gamma, float64(k)) / (float64(k) * math.Log(1/gamma))
	}
	lgk, _ := math.Lgamma(float64(k) + eta)
	lge, sgn := math.Lgamma(eta)
	lkf, _ := math.Lgamma(float64(k) + 1)
	prod := float64(sgn) * math.Exp(lgk-lge-lkf) // sign of Γ(η) for η in (−1, 0)
	return math.Pow(1-gamma, float64(k)) / (math.Pow(gamma, -eta) - 1) * prod
}

func poissonPMF(mu float64, k int) float64 {
	lkf, _ := math.Lgamma(float64(k) + 1)
	return math.Exp(-mu + float64(k)*math.Log(mu) - lkf)
}

// TestTrialsMeanAndDraw: Mean is the sum of k·P[K = k] (and agrees with
// dp_accounting's test pairs), and Draw at the quantile grid u = (j+½)/N gives
// each k about N·P[K = k] times (within one, as an inverse distribution
// function must).
func TestTrialsMeanAndDraw(t *testing.T) {
	cases := []Trials{}
	for _, eta := range []float64{-0.5, 0, 0.5, 1, 2} {
		for _, gamma := range []float64{0.05, 0.3, 0.9} {
			d, err := NegativeBinomialTrials(eta, gamma)
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, d)
		}
	}
	for _, mu := range []float64{1, 4, 20} {
		d, _ := PoissonTrials(mu)
		cases = append(cases, d)
	}
	for _, d := range cases {
		pmf := func(k int) float64 {
			if d.Dist == Poisson {
				return poissonPMF(d.Mu, k)
			}
			if k == 0 {
				return 0
			}
			return tnbPMF(d.Eta, d.Gamma, k)
		}
		sum, mean := 0.0, 0.0
		for k := 0; k < 20000; k++ {
			p := pmf(k)
			sum += p
			mean += float64(k) * p
		}
		if !tuneClose(sum, 1, 1e-9) {
			t.Fatalf("%v: probabilities sum to %.12g", d, sum)
		}
		if !tuneClose(d.Mean(), mean, 1e-9) {
			t.Errorf("%v: Mean = %.12g, Σ k·P[K=k] = %.12g", d, d.Mean(), mean)
		}
		const n = 20000
		counts := map[int]int{}
		for j := 0; j < n; j++ {
			counts[d.Draw((float64(j)+0.5)/n)]++
		}
		cdf := 0.0
		for k := 0; k < 200; k++ {
			lo := cdf
			cdf += pmf(k)
			// #{j : lo ≤ (j+½)/n < cdf}
			want := math.Ceil(cdf*n-0.5) - math.Ceil(lo*n-0.5)
			if math.Abs(float64(counts[k])-want) > 1 {
				t.Fatalf("%v: Draw gives %d %d times in %d quantiles, want %v", d, k, counts[k], n, want)
			}
		}
	}
	// dp_accounting's geometric mean 1/γ and logarithmic (1 − 1/γ)/log γ.
	if d, _ := GeometricTrials(8); !tuneClose(d.Mean(), 8, 1e-12) {
		t.Errorf("geometric mean 8: Mean = %v", d.Mean())
	}
	if d, _ := LogarithmicTrials(0.9); !tuneClose(d.Mean(), (1-1/0.9)/math.Log(0.9), 1e-12) {
		t.Errorf("logarithmic γ = 0.9: Mean = %v", d.Mean())
	}
	if d, _ := NegativeBinomialTrials(1e-12, 0.3); !tuneClose(d.Mean(), (1/0.3-1)/math.Log(1/0.3), 1e-9) {
		t.Errorf("η → 0: Mean = %v, want the logarithmic distribution's", d.Mean())
	}
}

func TestTuningRDPRejects(t *testing.T) {
	orders := []float64{2, 3}
	curve := []float64{0.1, 0.2}
	bad := []struct {
		name string
		err  error
	}{}
	add := func(name string, err error) {
		bad = append(bad, struct {
			name string
			err  error
		}{name, err})
	}
	_, err := NegativeBinomialTrials(-1, 0.1)
	add("η = −1", err)
	_, err = NegativeBinomialTrials(math.NaN(), 0.1)
	add("η NaN", err)
	_, err = NegativeBinomialTrials(1, 0)
	add("γ = 0", err)
	_, err = NegativeBinomialTrials(1, 1)
	add("γ = 1", err)
	_, err = NegativeBinomialTrials(1, 1e-5)
	add("mean 1e5", err)
	_, err = NegativeBinomialTrials(-0.99, 1e-7)
	add("γ below MinTrialGamma", err)
	_, err = PoissonTrials(0.5)
	add("μ = 0.5", err)
	_, err = PoissonTrials(math.Inf(1))
	add("μ = ∞", err)
	_, err = GeometricTrials(1)
	add("geometric mean 1", err)
	d, _ := GeometricTrials(4)
	_, err = TuningRDP(d, orders, []float64{0.1}, Balle)
	add("length mismatch", err)
	_, err = TuningRDP(d, []float64{1, 2}, curve, Balle)
	add("order 1", err)
	_, err = TuningRDP(d, []float64{2, 2}, curve, Balle)
	add("order twice", err)
	_, err = TuningRDP(d, orders, []float64{-1, 0.2}, Balle)
	add("negative RDP", err)
	_, err = TuningRDP(d, orders, []float64{math.NaN(), 0.2}, Balle)
	add("NaN RDP", err)
	_, err = TuningRDP(Trials{Dist: 7}, orders, curve, Balle)
	add("unknown distribution", err)
	_, err = TuningRDP(d, orders, curve, Conversion(9))
	add("unknown conversion", err)
	_, err = TuningEpsilon(d, orders, curve, 0, Balle)
	add("δ = 0", err)
	for _, b := range bad {
		if !errors.Is(b.err, ErrInvalidParameter) {
			t.Errorf("%s: err = %v, want ErrInvalidParameter", b.name, b.err)
		}
	}
}

// TestTuningEpsilonConversion: TuningEpsilon is the conversion of TuningRDP's
// curve, written out (Balle et al. 2020, Theorem 21), with orders unsorted.
func TestTuningEpsilonConversion(t *testing.T) {
	orders := []float64{32, 2, 1.5, 8, 4, 16, 64}
	trial := gaussianCurve(orders, 3)
	d, _ := GeometricTrials(10)
	rdp, err := TuningRDP(d, orders, trial, Balle)
	if err != nil {
		t.Fatal(err)
	}
	const delta = 1e-5
	want := math.Inf(1)
	for i, a := range orders {
		want = math.Min(want, rdp[i]+(math.Log(1/delta)-math.Log(a))/(a-1)+math.Log((a-1)/a))
	}
	got, err := TuningEpsilon(d, orders, trial, delta, Balle)
	if err != nil {
		t.Fatal(err)
	}
	if !tuneClose(got.Epsilon, want, 1e-12) {
		t.Errorf("TuningEpsilon = %.12g, conversion written out = %.12g", got.Epsilon, want)
	}
}

// searchDist returns the distribution of the best of K ~ d draws from p
// (outcome y with score y; index 0 of the result is ⊥, released when K = 0),
// by P[best ≤ y] = Σ_k P[K = k]·F(y)^k with the probabilities written out.
func searchDist(d Trials, p []float64) []float64 {
	pk := func(k int) float64 {
		if d.Dist == Poisson {
			return poissonPMF(d.Mu, k)
		}
		if k == 0 {
			return 0
		}
		return tnbPMF(d.Eta, d.Gamma, k)
	}
	out := make([]float64, len(p)+1)
	out[0] = pk(0)
	prev := out[0]
	F := 0.0
	for y := range p {
		F += p[y]
		G := 0.0
		for k := 0; k < 5000; k++ { // the tails left are below e^(−100)
			G += pk(k) * math.Pow(F, float64(k))
		}
		out[y+1] = G - prev
		prev = G
	}
	return out
}

// renyi is D_λ(P‖Q) over a finite outcome space.
func renyi(p, q []float64, l float64) float64 {
	s := 0.0
	for i := range p {
		if p[i] == 0 {
			continue
		}
		s += math.Exp(l*math.Log(p[i]) + (1-l)*math.Log(q[i]))
	}
	return math.Log(s) / (l - 1)
}

// TestTuningRDPBruteForce runs the search exactly on a small mechanism: the
// trial outputs y in {0, …, 5} with score y, with probabilities ∝ e^(−a·y) on
// one data set and ∝ e^(−(a−b)·y) on its neighbour (the neighbour pushes the
// trial towards higher scores, which the best of many trials amplifies). The
// exact Rényi divergence of the search's outputs, both ways, must never exceed
// TuningRDP computed from the trial's exact RDP, and the bound must not be
// loose by more than a factor of 4 in the ε at δ = 1e-6 it certifies.
func TestTuningRDPBruteForce(t *testing.T) {
	orders := []float64{1.25, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}
	dists := []Trials{}
	for _, c := range []struct{ eta, gamma float64 }{{0, 0.05}, {0.5, 0.1}, {1, 0.1}, {1, 0.02}, {2, 0.2}} {
		d, err := NegativeBinomialTrials(c.eta, c.gamma)
		if err != nil {
			t.Fatal(err)
		}
		dists = append(dists, d)
	}
	for _, mu := range []float64{2, 10} {
		d, _ := PoissonTrials(mu)
		dists = append(dists, d)
	}
	for _, mech := range []struct{ a, b float64 }{{0.5, 0.1}, {1, 0.3}, {0.2, 0.05}, {2, 1}} {
		p, q := make([]float64, 6), make([]float64, 6)
		sp, sq := 0.0, 0.0
		for y := range p {
			p[y] = math.Exp(-mech.a * float64(y))
			q[y] = math.Exp(-(mech.a - mech.b) * float64(y))
			sp += p[y]
			sq += q[y]
		}
		for y := range p {
			p[y] /= sp
			q[y] /= sq
		}
		trial := make([]float64, len(orders))
		for i, l := range orders {
			trial[i] = math.Max(renyi(p, q, l), renyi(q, p, l))
		}
		for _, d := range dists {
			bound, err := TuningRDP(d, orders, trial, Balle)
			if err != nil {
				t.Fatal(err)
			}
			sp, sq := searchDist(d, p), searchDist(d, q)
			exact := make([]float64, len(orders))
			for i, l := range orders {
				exact[i] = math.Max(renyi(sp, sq, l), renyi(sq, sp, l))
				if exact[i] > bound[i]*(1+1e-9) {
					t.Errorf("%v, trial %+v, order %v: exact Rényi divergence %.6g exceeds the bound %.6g", d, mech, l, exact[i], bound[i])
				}
			}
			const delta = 1e-6
			eb, err := EpsilonFromRDP(orders, bound, delta, Balle)
			if err != nil {
				t.Fatal(err)
			}
			ee, err := EpsilonFromRDP(orders, exact, delta, Balle)
			if err != nil {
				t.Fatal(err)
			}
			et, _ := EpsilonFromRDP(orders, trial, delta, Balle)
			if testing.Verbose() {
				fmt.Printf("%-50v trial %+v: ε(trial) %.3f  ε(search, exact) %.3f  ε(search, bound) %.3f\n", d, mech, et.Epsilon, ee.Epsilon, eb.Epsilon)
			}
			if eb.Epsilon > 4*ee.Epsilon {
				t.Errorf("%v, trial %+v: bound's ε = %.4g is more than 4 times the exact search's ε = %.4g", d, mech, eb.Epsilon, ee.Epsilon)
			}
		}
	}
}
