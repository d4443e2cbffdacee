package dpoptim

import (
	"errors"
	"math"
	"testing"

	"github.com/privtrain/privtrain/accountant"
)

var _ interface {
	Rule
	NoiseScaler
	Schedule
} = (*ADPSqrtDecay)(nil)

// The paper's orange schedule, computed here from its text (§5, Figure 2):
// η_t = 0.1 − α_T√t with α_T = (0.1 − 1e-10)/√T, and ADP's α_{t+1} = 1/√η_t (η = 1).
func TestADPSqrtDecayClosedForm(t *testing.T) {
	const T = 100
	s := &ADPSqrtDecay{Eta: 1, Start: 0.1, End: 1e-10, Steps: T}
	cases := []struct {
		t    int
		rate float64
	}{
		{0, 0.1},
		{1, 0.1 - (0.1-1e-10)/10},                // √(1/100) = 1/10
		{25, 0.05 + 0.5e-10},                     // 0.1 − (0.1 − 1e-10)·½
		{64, 0.1 - 0.8*(0.1-1e-10)},              // √0.64 = 0.8
		{81, 0.1 - 0.9*(0.1-1e-10)},              // √0.81 = 0.9
		{99, 0.1 - 0.99498743710662*(0.1-1e-10)}, // √0.99
	}
	for _, c := range cases {
		if r := s.Rate(c.t); math.Abs(r-c.rate) > 1e-15 {
			t.Errorf("η_%d = %.17g, want %.17g", c.t, r, c.rate)
		}
		if a := s.NoiseScale(c.t); math.Abs(a*math.Sqrt(c.rate)-1) > 1e-12 {
			t.Errorf("α_%d = %v, want 1/√%v = %v", c.t+1, a, c.rate, 1/math.Sqrt(c.rate))
		}
	}
	// Eta scales the step, not the noise (b_{t+1} = Eta/η_t does not depend on Eta).
	s3 := &ADPSqrtDecay{Eta: 3, Start: 0.1, End: 1e-10, Steps: T}
	if r := s3.Rate(25); math.Abs(r-3*(0.05+0.5e-10)) > 1e-15 || s3.NoiseScale(25) != s.NoiseScale(25) {
		t.Errorf("Eta 3: η_25 = %v, α = %v; want %v, %v", r, s3.NoiseScale(25), 3*(0.05+0.5e-10), s.NoiseScale(25))
	}
	dp := &ADPSqrtDecay{Eta: 1, Start: 0.1, End: 1e-10, Steps: T, ConstantNoise: true}
	for _, tt := range []int{0, 50, 99} {
		if dp.NoiseScale(tt) != 1 || dp.Rate(tt) != s.Rate(tt) {
			t.Errorf("ConstantNoise at %d: α = %v, η = %v", tt, dp.NoiseScale(tt), dp.Rate(tt))
		}
	}
}

// Σ_t 1/α_{t+1}² = Σ_t η_t (the factor of Theorem 4.1's σ²), and Cauchy–Schwarz: ADP's
// M = (Σα²/b²)(Σ1/α²) equals (Σ1/b)² and is below DP-SGD's T·Σ1/b².
func TestADPSqrtDecayMFunctional(t *testing.T) {
	const T = 11760
	adp := &ADPSqrtDecay{Eta: 1, Start: 0.1, End: 1e-10, Steps: T}
	alphas, err := NoiseSchedule(adp, T)
	if err != nil {
		t.Fatal(err)
	}
	var sumInvA2, sumA2B2, sumInvB, sumInvB2 float64
	slope := (0.1 - 1e-10) / math.Sqrt(T)
	for i, a := range alphas {
		invB := 0.1 - slope*math.Sqrt(float64(i))
		sumInvA2 += 1 / (a * a)
		sumA2B2 += a * a * invB * invB
		sumInvB += invB
		sumInvB2 += invB * invB
	}
	if math.Abs(sumInvA2/sumInvB-1) > 1e-12 {
		t.Errorf("Σ1/α² = %v, want Σ η_t = %v", sumInvA2, sumInvB)
	}
	// Σ_{t<T} (0.1 − α_T√t) ≈ 0.1·T − α_T·(2/3)T^{3/2} = T/30 (Euler–Maclaurin: + α_T√T/2 …)
	if math.Abs(sumInvB-float64(T)/30) > 0.06 {
		t.Errorf("Σ η_t = %v, want ≈ T/30 = %v", sumInvB, float64(T)/30)
	}
	madp, mdp := sumA2B2*sumInvA2, float64(T)*sumInvB2
	if math.Abs(madp/(sumInvB*sumInvB)-1) > 1e-12 {
		t.Errorf("M_adp = %v, want (Σ1/b)² = %v", madp, sumInvB*sumInvB)
	}
	// For η_t = 0.1(1 − √(t/T)): T·Σ η² / (Σ η)² → (1/6)/(1/3)² = 1.5.
	if r := mdp / madp; math.Abs(r-1.5) > 0.01 {
		t.Errorf("M_dp/M_adp = %v, want ≈ 1.5", r)
	}
}

// A Private step around the rule: with a zero gradient, θ moves by −η_t·N(0, (z·α_{t+1}·C)²)/(q·n),
// so the spread of the move over many coordinates is η_t·z·α_{t+1}·C/(q·n), with
// α_{t+1} = 1/√η_t from the closed form; and the ledger holds z·α_{t+1} for each step.
func TestADPSqrtDecayPrivateNoise(t *testing.T) {
	const d, T, z, C, q, n = 20000, 9, 1.5, 2.0, 0.1, 400
	rule := &ADPSqrtDecay{Eta: 1, Start: 0.1, End: 1e-10, Steps: T}
	ledger := accountant.NewLedger()
	p := mustPrivate(t, rule, PrivateConfig{NoiseMultiplier: z, ClipNorm: C, SampleRate: q, DatasetSize: n,
		Recorder: ledger, Noise: NewSeededNoise(7)})
	w, prev, zero := make([]float64, d), make([]float64, d), make([]float64, d)
	for step := range T {
		copy(prev, w)
		if got, want := p.NoiseMultiplier(), z/math.Sqrt(0.1-(0.1-1e-10)*math.Sqrt(float64(step)/T)); math.Abs(got/want-1) > 1e-12 {
			t.Errorf("step %d: z_t = %v, want %v", step, got, want)
		}
		if err := p.Step(w, zero, 40); err != nil {
			t.Fatal(err)
		}
		eta := 0.1 - (0.1-1e-10)*math.Sqrt(float64(step)/T)
		wantSD := eta * z / math.Sqrt(eta) * C / (q * n)
		ss := 0.0
		for i := range w {
			dw := w[i] - prev[i]
			ss += dw * dw
		}
		// The sample sd of d = 20,000 normals is within 2.5 % (5 standard errors) of σ.
		if sd := math.Sqrt(ss / d); math.Abs(sd/wantSD-1) > 0.025 {
			t.Errorf("step %d: sd of the move %v, want %v", step, sd, wantSD)
		}
	}
	if err := rule.Step(w, zero); !errors.Is(err, ErrConfig) {
		t.Errorf("a step past the horizon: %v, want ErrConfig", err)
	}
}

// The ε of a run of the schedule against an independent computation: without sampling
// (q = 1) step t is a Gaussian mechanism of RDP α/(2z_t²), composition adds, and Balle et
// al.'s Theorem 21 turns RDP ρ(α) into ε = ρ(α) + log((α−1)/α) − (log δ + log α)/(α−1),
// minimised over the same orders.
func TestADPSqrtDecayEpsilonIndependent(t *testing.T) {
	const T, z, delta = 50, 4.0, 1e-5
	orders := []float64{1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}
	for _, constant := range []bool{false, true} {
		rule := &ADPSqrtDecay{Eta: 1, Start: 0.1, End: 1e-10, Steps: T, ConstantNoise: constant}
		ledger := accountant.NewLedger(accountant.WithOrders(orders))
		p := mustPrivate(t, rule, PrivateConfig{NoiseMultiplier: z, ClipNorm: 1, SampleRate: 1, DatasetSize: 100,
			Recorder: ledger, Noise: NewSeededNoise(3)})
		w := make([]float64, 3)
		for range T {
			if err := p.Step(w, []float64{1, 0, -1}, 100); err != nil {
				t.Fatal(err)
			}
		}
		spent, err := ledger.Epsilon(delta)
		if err != nil {
			t.Fatal(err)
		}
		sumInvZ2 := 0.0
		for step := range T {
			zt := z
			if !constant {
				zt = z / math.Sqrt(0.1-(0.1-1e-10)*math.Sqrt(float64(step)/T))
			}
			sumInvZ2 += 1 / (zt * zt)
		}
		best := math.Inf(1)
		for _, a := range orders {
			rho := a * sumInvZ2 / 2
			best = math.Min(best, rho+math.Log((a-1)/a)-(math.Log(delta)+math.Log(a))/(a-1))
		}
		if math.Abs(spent.Epsilon/best-1) > 1e-9 {
			t.Errorf("constant noise %v: ledger ε = %v, independent %v", constant, spent.Epsilon, best)
		}
	}
}

func TestADPSqrtDecayConfigAndState(t *testing.T) {
	for _, bad := range []*ADPSqrtDecay{
		{Eta: 0, Start: 0.1, Steps: 10},
		{Eta: 1, Start: 0.1, End: 0.2, Steps: 10},
		{Eta: 1, Start: 0.1, End: -1, Steps: 10},
		{Eta: 1, Start: math.Inf(1), Steps: 10},
		{Eta: 1, Start: 0.1, Steps: 0},
	} {
		if err := bad.Step([]float64{1}, []float64{1}); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", bad, err)
		}
	}
	// Restoring the step continues the schedule exactly: two steps, or one, a State, a
	// fresh rule and one more, give the same bits.
	g := []float64{0.3, -0.7}
	a := &ADPSqrtDecay{Eta: 2, Start: 0.1, End: 1e-10, Steps: 5}
	wa := []float64{1, 1}
	for range 2 {
		if err := a.Step(wa, g); err != nil {
			t.Fatal(err)
		}
	}
	b := &ADPSqrtDecay{Eta: 2, Start: 0.1, End: 1e-10, Steps: 5}
	wb := []float64{1, 1}
	if err := b.Step(wb, g); err != nil {
		t.Fatal(err)
	}
	c := &ADPSqrtDecay{Eta: 2, Start: 0.1, End: 1e-10, Steps: 5}
	if err := c.SetState(b.State()); err != nil {
		t.Fatal(err)
	}
	if err := c.Step(wb, g); err != nil {
		t.Fatal(err)
	}
	if !equalBits(wa, wb) {
		t.Errorf("resumed %v, straight %v", wb, wa)
	}
	want := 1 - 2*(0.1+0.1-(0.1-1e-10)*math.Sqrt(1.0/5))*0.3
	if math.Abs(wa[0]-want) > 1e-15 {
		t.Errorf("θ₂ = %v, want %v", wa[0], want)
	}
	if err := c.SetState(State{Step: 1, Scalars: map[string]float64{"b2": 1}}); err == nil {
		t.Error("a state with an unknown scalar was accepted")
	}
}

// Calibrating the schedule for a target ε, then running it, spends that ε.
func TestADPSqrtDecayCalibrates(t *testing.T) {
	const steps, q, eps, delta = 40, 0.05, 1.0, 1e-5
	rule := &ADPSqrtDecay{Eta: 1, Start: 0.1, End: 1e-10, Steps: steps}
	opts := []accountant.Option{accountant.WithOrders([]float64{2, 4, 8, 16, 32})}
	z, achieved, err := CalibrateSchedule(rule, q, steps, eps, delta, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ledger := accountant.NewLedger(opts...)
	p := mustPrivate(t, rule, PrivateConfig{NoiseMultiplier: z, ClipNorm: 1, SampleRate: q, DatasetSize: 1000,
		Recorder: ledger, Noise: NewSeededNoise(1)})
	w := make([]float64, 2)
	for range steps {
		if err := p.Step(w, []float64{1, -1}, 50); err != nil {
			t.Fatal(err)
		}
	}
	spent, err := ledger.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	if spent.Epsilon > eps || spent.Epsilon != achieved || math.Abs(spent.Epsilon-eps) > 1e-3 {
		t.Errorf("spent ε = %v, calibration %v, target %v", spent.Epsilon, achieved, eps)
	}
}

// AdaGrad-norm's Rate is the step size of its last step, η/√(b₀² + max(‖g‖², ν)) by hand,
// and NaN for any other step.
func TestADPAdaGradNormLastRate(t *testing.T) {
	a := &ADPAdaGradNorm{Eta: 2, B0: 3, Nu: 0.5, C: 1}
	if r := a.Rate(0); !math.IsNaN(r) {
		t.Errorf("before a step: %v", r)
	}
	w := []float64{0, 0}
	if err := a.Step(w, []float64{3, 4}); err != nil {
		t.Fatal(err)
	}
	if r := a.Rate(0); math.Abs(r-2/math.Sqrt(34)) > 1e-15 {
		t.Errorf("rate of step 0 = %v, want 2/√34", r)
	}
	if !math.IsNaN(a.Rate(1)) {
		t.Error("rate of a step not taken")
	}
}
