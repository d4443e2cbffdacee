package dpoptim

import (
	"errors"
	"math"
	"testing"

	"github.com/privtrain/privtrain/accountant"
)

// The M functional of the ADP paper (Theorem 4.2, digest §3.4) for the experiments'
// schedule η_t = 1/√(20+t), i.e. b_{t+1} = √(20 + t) (A = 19, C = 1), sums over
// t = 0..T−1: M(α, b) = (Σ α²/b²)(Σ 1/α²); ADP's α² = b attains M_adp = (Σ 1/b)²,
// DP-SGD's α ≡ 1 gives M_dp = T·Σ 1/b². Oracle values from the digest.
func TestADPPolynomialMFunctional(t *testing.T) {
	cases := []struct {
		T                          int
		mdp, madp, ratio, sumInvA2 float64
	}{
		{11760, 75306.24, 43361.73, 1.7367, 208.235},
		{23520, 166895.83, 88815.77, 1.8791, 298.020},
		{39200, 298171.09, 149959.68, 1.9883, 387.246},
	}
	adp := &ADPPolynomial{Eta: 1, A: 19, C: 1}
	dp := &ADPPolynomial{Eta: 1, A: 19, C: 1, ConstantNoise: true}
	m := func(r *ADPPolynomial, T int) (mValue, sumInvAlpha2 float64) {
		var s1, s2 float64
		for t := range T {
			alpha, invB := r.NoiseScale(t), r.Rate(t)
			s1 += alpha * alpha * invB * invB
			s2 += 1 / (alpha * alpha)
		}
		return s1 * s2, s2
	}
	for _, c := range cases {
		madp, sumADP := m(adp, c.T)
		mdp, sumDP := m(dp, c.T)
		if math.Abs(madp-c.madp) > 0.01 {
			t.Errorf("T=%d: M_adp = %.2f, digest %.2f", c.T, madp, c.madp)
		}
		if math.Abs(mdp-c.mdp) > 0.01 {
			t.Errorf("T=%d: M_dp = %.2f, digest %.2f", c.T, mdp, c.mdp)
		}
		if math.Abs(mdp/madp-c.ratio) > 5e-5 {
			t.Errorf("T=%d: M_dp/M_adp = %.4f, digest %.4f", c.T, mdp/madp, c.ratio)
		}
		if math.Abs(sumADP-c.sumInvA2) > 5e-4 || sumDP != float64(c.T) {
			t.Errorf("T=%d: Σ1/α² = %.3f (ADP), %v (DP); digest %.3f, T", c.T, sumADP, sumDP, c.sumInvA2)
		}
		// Cauchy–Schwarz: α² = b minimises M, so M_adp = (Σ 1/b)².
		sumInvB := 0.0
		for t := range c.T {
			sumInvB += adp.Rate(t)
		}
		if math.Abs(madp/(sumInvB*sumInvB)-1) > 1e-12 {
			t.Errorf("T=%d: M_adp = %v ≠ (Σ1/b)² = %v", c.T, madp, sumInvB*sumInvB)
		}
	}
}

// AdaGrad-norm, two steps by hand: b₁² = b₀² + max(β‖g₀‖², ν), θ₁ = θ₀ − η/b₁·g₀, and the
// floor ν when the gradient is small; the boost β_t = max(β/((t mod P)+1), 1).
func TestADPAdaGradNormByHand(t *testing.T) {
	a := &ADPAdaGradNorm{Eta: 2, B0: 3, Nu: 0.5, C: 1}
	w := []float64{1, 1}
	if err := a.Step(w, []float64{3, 4}); err != nil { // b₁² = 9 + 25 = 34
		t.Fatal(err)
	}
	w1 := []float64{1 - 2/math.Sqrt(34)*3, 1 - 2/math.Sqrt(34)*4}
	if err := a.Step(w, []float64{0.1, 0}); err != nil { // b₂² = 34 + max(0.01, 0.5) = 34.5
		t.Fatal(err)
	}
	want := []float64{w1[0] - 2/math.Sqrt(34.5)*0.1, w1[1]}
	for i := range w {
		if math.Abs(w[i]-want[i]) > 1e-15 {
			t.Fatalf("w = %v, want %v", w, want)
		}
	}
	if s, ok := a.State().Scalars["b2"]; !ok || math.Abs(s-34.5) > 1e-13 {
		t.Errorf("b² = %v, want 34.5", s)
	}
	boosted := &ADPAdaGradNorm{Eta: 1, B0: 1, Nu: 1e-9, C: 1, Beta: 8, BoostPeriod: 3}
	for step, want := range []float64{8, 4, 8.0 / 3, 8, 4} {
		if got := boosted.boost(step); got != want {
			t.Errorf("β_%d = %v, want %v", step, got, want)
		}
	}
	if got := (&ADPAdaGradNorm{Beta: 2, BoostPeriod: 5}).boost(4); got != 1 {
		t.Errorf("β_4 = %v, want max(2/5, 1) = 1", got)
	}
}

// With α ≡ 1, ADP-SGD is DP-SGD with the same step sizes: identical iterates for the same
// seed and identical ε (each step records the same (q, z)).
func TestADPConstantNoiseIsDPSGD(t *testing.T) {
	const d, steps, q, z = 50, 200, 0.02, 1.3
	f := newQuadratic(d, 0.5, 2, 9)
	run := func(rule Rule) ([]float64, float64) {
		ledger := accountant.NewLedger()
		p := mustPrivate(t, rule, PrivateConfig{NoiseMultiplier: z, ClipNorm: 1, SampleRate: q, DatasetSize: 500,
			Recorder: ledger, Noise: NewSeededNoise(4)})
		w := make([]float64, d)
		sum := make([]float64, d)
		for range steps {
			f.gradSum(sum, w, q*500)
			if err := p.Step(w, sum, 10); err != nil {
				t.Fatal(err)
			}
		}
		spent, err := ledger.Epsilon(1e-5)
		if err != nil {
			t.Fatal(err)
		}
		return w, spent.Epsilon
	}
	// b_{t+1}² = 19 + (t+1) = 20 + t: InverseSqrt{1, 20, 1} is the same step size, exactly.
	wADP, epsADP := run(&ADPPolynomial{Eta: 1, A: 19, C: 1, ConstantNoise: true})
	wSGD, epsSGD := run(NewSGD(InverseSqrt{Eta: 1, A: 20, C: 1}))
	if !equalBits(wADP, wSGD) {
		t.Error("ADP-SGD with α ≡ 1 and DP-SGD give different iterates")
	}
	if epsADP != epsSGD {
		t.Errorf("ε: ADP-SGD with α ≡ 1 %v, DP-SGD %v", epsADP, epsSGD)
	}
}

// After calibration of the base z, a run of the schedule spends the target ε (within 1e-3;
// the ledger of the run gives exactly the ε the calibration reported).
func TestCalibrateScheduleMeetsTarget(t *testing.T) {
	var intOrders []float64
	for a := 2; a <= 32; a++ {
		intOrders = append(intOrders, float64(a))
	}
	cases := []struct {
		name string
		rule interface {
			Rule
			NoiseScaler
		}
		steps  int
		q, eps float64
		opts   []accountant.Option
	}{
		{"polynomial", &ADPPolynomial{Eta: 1, A: 19, C: 1}, 60, 0.05, 1.5, []accountant.Option{accountant.WithOrders(intOrders)}},
		{"AdaGrad-norm", &ADPAdaGradNorm{Eta: 1, B0: 4, Nu: 1e-5, C: 0.5}, 60, 0.05, 0.8, []accountant.Option{accountant.WithOrders(intOrders)}},
		{"polynomial, default orders", &ADPPolynomial{Eta: 1, A: 19, C: 1}, 8, 0.1, 2, nil},
	}
	const delta = 1e-5
	for _, c := range cases {
		z, achieved, err := CalibrateSchedule(c.rule, c.q, c.steps, c.eps, delta, c.opts...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ledger := accountant.NewLedger(c.opts...)
		p := mustPrivate(t, c.rule, PrivateConfig{NoiseMultiplier: z, ClipNorm: 1, SampleRate: c.q, DatasetSize: 1000,
			Recorder: ledger, Noise: NewSeededNoise(1)})
		w := make([]float64, 4)
		for range c.steps {
			if err := p.Step(w, []float64{1, -1, 0.5, 0}, 50); err != nil {
				t.Fatal(err)
			}
		}
		spent, err := ledger.Epsilon(delta)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(spent.Epsilon-c.eps) > 1e-3 || spent.Epsilon > c.eps {
			t.Errorf("%s: run spent ε = %v, target %v", c.name, spent.Epsilon, c.eps)
		}
		if spent.Epsilon != achieved {
			t.Errorf("%s: run spent ε = %v, calibration reported %v", c.name, spent.Epsilon, achieved)
		}
	}
}

// For α ≡ 1 the schedule calibration is the accountant's constant-noise calibration.
func TestCalibrateScheduleConstantMatchesAccountant(t *testing.T) {
	const q, steps, eps, delta = 0.01, 500, 1.0, 1e-5
	z, e, err := CalibrateSchedule(&ADPPolynomial{Eta: 1, A: 1, C: 1, ConstantNoise: true}, q, steps, eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	z0, e0, err := accountant.CalibrateNoise(q, steps, eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(z/z0-1) > 2e-4 || math.Abs(e-e0) > 1e-3 {
		t.Errorf("CalibrateSchedule: z = %v, ε = %v; accountant.CalibrateNoise: z = %v, ε = %v", z, e, z0, e0)
	}
}

func TestCalibrateScheduleErrors(t *testing.T) {
	r := &ADPPolynomial{Eta: 1, A: 19, C: 1}
	if _, _, err := CalibrateSchedule(nil, 0.1, 10, 1, 1e-5); !errors.Is(err, ErrConfig) {
		t.Errorf("nil scaler: %v", err)
	}
	if _, _, err := CalibrateSchedule(r, 0, 10, 1, 1e-5); !errors.Is(err, ErrConfig) {
		t.Errorf("q = 0: %v", err)
	}
	if _, _, err := CalibrateSchedule(r, 0.1, 0, 1, 1e-5); !errors.Is(err, ErrConfig) {
		t.Errorf("steps = 0: %v", err)
	}
	if _, _, err := CalibrateSchedule(&ADPPolynomial{Eta: 1, A: -5, C: 1}, 0.1, 10, 1, 1e-5); !errors.Is(err, ErrConfig) {
		t.Errorf("negative scale: %v", err)
	}
	if _, _, err := CalibrateSchedule(r, 0.1, 10, -1, 1e-5); !errors.Is(err, accountant.ErrInvalidParameter) {
		t.Errorf("ε < 0: %v", err)
	}
	if _, _, err := CalibrateSchedule(r, 0.1, 10, 1, 2); !errors.Is(err, accountant.ErrInvalidParameter) {
		t.Errorf("δ = 2: %v", err)
	}
}

// The schedule handed to the paper's Theorem 4.1 calibration: Σ 1/α_t² over the
// experiments' blue schedule is the digest's 208.235 (T = 11760), and DP-SGD's is T.
func TestNoiseScheduleForTheorem41(t *testing.T) {
	alphas, err := NoiseSchedule(&ADPPolynomial{Eta: 1, A: 19, C: 1}, 11760)
	if err != nil {
		t.Fatal(err)
	}
	s := 0.0
	for _, a := range alphas {
		s += 1 / (a * a)
	}
	if math.Abs(s-208.235) > 5e-4 {
		t.Errorf("Σ 1/α² = %v, digest 208.235", s)
	}
	// With α ≡ 1 the accountant's Theorem 4.1 noise is Theorem A.1's DP-SGD noise,
	// σ = 0.03971 for T = 11700, n = 50000, m = 256, G = 1, ε = 16·0.8 (digest §7.8).
	ones, err := NoiseSchedule(&ADPPolynomial{Eta: 1, A: 1, C: 1, ConstantNoise: true}, 11700)
	if err != nil {
		t.Fatal(err)
	}
	sigma, err := accountant.ADPNoise(ones, 50000, 256, 1, 16*0.8, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if z := sigma * 256 / 1; math.Abs(sigma-0.03971) > 5e-6 || math.Abs(z-10.1668) > 5e-4 {
		t.Errorf("σ = %v, z = σ·m/C = %v; digest 0.03971, 10.1668", sigma, z)
	}
	if _, err := NoiseSchedule(nil, 3); !errors.Is(err, ErrConfig) {
		t.Errorf("nil: %v", err)
	}
	if _, err := NoiseSchedule(&ADPPolynomial{Eta: 1, A: 1, C: 1}, 0); !errors.Is(err, ErrConfig) {
		t.Errorf("0 steps: %v", err)
	}
}
