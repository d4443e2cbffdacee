package dpoptim

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// z_Δ by hand: exact values where (z⁻² − (2σ_b)⁻²)^(−½) is rational or a simple surd,
// and the unfactored textbook expression (TensorFlow Federated's
// adaptive_clip_noise_params) elsewhere.
func TestAdaptiveNoiseMultiplierClosedForm(t *testing.T) {
	for _, c := range []struct{ z, sigmaB, want float64 }{
		{1, 1, 2 / math.Sqrt(3)}, // 1 − 1/4 = 3/4
		{3, 2.5, 3.75},           // 1/9 − 1/25 = 16/225
		{0.6, 0.5, 0.75},         // 1/0.36 − 1 = 16/9
		{1.1, 12.8, math.Pow(math.Pow(1.1, -2)-math.Pow(25.6, -2), -0.5)}, // batch 256, σ_b = 256/20
		{0.5, 1e6, math.Pow(math.Pow(0.5, -2)-math.Pow(2e6, -2), -0.5)},
		{7.9, 4, math.Pow(math.Pow(7.9, -2)-math.Pow(8, -2), -0.5)},
	} {
		got, err := AdaptiveNoiseMultiplier(c.z, c.sigmaB)
		if err != nil {
			t.Fatalf("z = %v, σ_b = %v: %v", c.z, c.sigmaB, err)
		}
		if math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("z_Δ(z = %v, σ_b = %v) = %.17g, want %.17g", c.z, c.sigmaB, got, c.want)
		}
		if got <= c.z {
			t.Errorf("z_Δ(z = %v, σ_b = %v) = %v, want more noise than z", c.z, c.sigmaB, got)
		}
	}
	for _, c := range []struct {
		z, sigmaB float64
		names     []string
	}{
		{2, 1, []string{"σ_b = 1", "z = 2"}}, // z = 2σ_b: the count alone spends everything
		{3, 1, []string{"σ_b = 1", "z = 3"}},
		{0, 1, []string{"z = 0"}},
		{math.NaN(), 1, []string{"z = NaN"}},
		{1, 0, []string{"σ_b = 0"}},
		{1, -1, []string{"σ_b = -1"}},
		{1, math.Inf(1), []string{"σ_b = +Inf"}},
	} {
		_, err := AdaptiveNoiseMultiplier(c.z, c.sigmaB)
		if !errors.Is(err, ErrConfig) {
			t.Errorf("z = %v, σ_b = %v: err = %v, want ErrConfig", c.z, c.sigmaB, err)
			continue
		}
		for _, n := range c.names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("z = %v, σ_b = %v: error %q does not name %q", c.z, c.sigmaB, err, n)
			}
		}
	}
}

// The paper's equivalence: the sum (sensitivity C, noise z_Δ·C) and the centred count
// (sensitivity ½, noise σ_b) released together are the Gaussian mechanism on one vector
// whose sensitivity over noise is 1/z. Checked two ways: the μ of μ-GDP from the
// formula, μ² = (C/(z_Δ C))² + (½/σ_b)² = 1/z², and the Rényi divergence of order 2 of
// the pair computed by numerical quadrature, D₂ = log Π_j ∫ p_j²/q_j = 1/z² (the RDP of
// the Gaussian mechanism with multiplier z at α = 2 is α/(2z²)).
func TestAdaptiveJointMechanismIsGaussianWithZ(t *testing.T) {
	const clip = 0.37
	for _, c := range []struct{ z, sigmaB float64 }{{1, 1}, {0.8, 12.8}, {2.5, 1.5}, {1.1, 0.6}} {
		zd, err := AdaptiveNoiseMultiplier(c.z, c.sigmaB)
		if err != nil {
			t.Fatal(err)
		}
		mu2 := math.Pow(clip/(zd*clip), 2) + math.Pow(0.5/c.sigmaB, 2)
		if math.Abs(mu2-1/(c.z*c.z)) > 1e-12/(c.z*c.z) {
			t.Errorf("z = %v, σ_b = %v: μ² = %v, want 1/z² = %v", c.z, c.sigmaB, mu2, 1/(c.z*c.z))
		}
		d2 := math.Log(renyi2Integral(clip, zd*clip) * renyi2Integral(0.5, c.sigmaB))
		if math.Abs(d2-1/(c.z*c.z)) > 1e-6 {
			t.Errorf("z = %v, σ_b = %v: D₂ by quadrature = %v, want 1/z² = %v", c.z, c.sigmaB, d2, 1/(c.z*c.z))
		}
	}
}

// renyi2Integral is ∫ N(x; Δ, s)² / N(x; 0, s) dx by the composite Simpson rule over
// ±(Δ + 40 s).
func renyi2Integral(delta, s float64) float64 {
	pdf := func(x, m float64) float64 {
		return math.Exp(-(x-m)*(x-m)/(2*s*s)) / (s * math.Sqrt(2*math.Pi))
	}
	lo, hi := -40*s, 2*delta+40*s
	const n = 200000
	h := (hi - lo) / n
	sum := 0.0
	for i := 0; i <= n; i++ {
		x := lo + float64(i)*h
		p := pdf(x, delta)
		f := p * p / pdf(x, 0)
		switch {
		case i == 0 || i == n:
			sum += f
		case i%2 == 1:
			sum += 4 * f
		default:
			sum += 2 * f
		}
	}
	return sum * h / 3
}

func adaptivePrivate(t testing.TB, rule Rule, z, c0, q float64, n int, a AdaptiveClip, seed uint64, rec Recorder) *Private {
	t.Helper()
	if rec == nil {
		rec = &fakeRecorder{}
	}
	return mustPrivate(t, rule, PrivateConfig{NoiseMultiplier: z, ClipNorm: c0, SampleRate: q,
		DatasetSize: n, Recorder: rec, Noise: NewSeededNoise(seed), Adaptive: &a})
}

// The noisy fraction read back from the released clip norms, b̃_t = γ − log(C_{t+1}/C_t)/η,
// has mean unclipped/m − batch/(2m) + ½ (TF Privacy's centred count over the EXPECTED
// batch size m) and standard deviation σ_b/m. With batch 900 ≠ m = 1000 the centring is
// visible: the mean is 0.35, not 300/1000 or 300/900.
func TestAdaptiveNoisyCountMoments(t *testing.T) {
	const (
		n, q             = 10000, 0.1 // m = 1000
		batch, unclipped = 900, 300
		sigmaB, gamma    = 50.0, 0.35 // γ at the mean: C does not drift
		eta              = 0.2
		draws            = 20000
	)
	p := adaptivePrivate(t, NewSGD(Constant(0)), 1, 1, q, n, AdaptiveClip{TargetQuantile: gamma, LearningRate: eta, CountNoise: sigmaB}, 5, nil)
	w, sum := []float64{0}, []float64{0}
	var s, s2 float64
	for range draws {
		c := p.ClipNorm()
		if err := p.StepAdaptive(w, sum, batch, unclipped); err != nil {
			t.Fatal(err)
		}
		b := gamma - math.Log(p.ClipNorm()/c)/eta
		s += b
		s2 += b * b
	}
	mean := s / draws
	variance := s2/draws - mean*mean
	wantMean, wantSD := 0.35, sigmaB/1000
	if se := wantSD / math.Sqrt(draws); math.Abs(mean-wantMean) > 5*se {
		t.Errorf("mean of b̃ = %v, want %v ± %v", mean, wantMean, 5*se)
	}
	// The sample variance of n normal draws has relative standard error √(2/n) ≈ 1 %.
	if r := variance / (wantSD * wantSD); r < 0.95 || r > 1.05 {
		t.Errorf("variance of b̃ = %v, want %v (ratio %v)", variance, wantSD*wantSD, r)
	}
}

// With almost no count noise and a fixed data set, C converges to the γ-quantile of the
// per-example norms, computed by sorting. The whole data set is the batch (q = 1), each
// step counting the norms at most C_t.
func TestAdaptiveClipConvergesToQuantile(t *testing.T) {
	const n = 1000
	rng := rand.New(rand.NewPCG(3, 4))
	norms := make([]float64, n)
	for i := range norms {
		norms[i] = math.Exp(rng.NormFloat64()) // log-normal, median 1
	}
	sorted := slices.Clone(norms)
	sort.Float64s(sorted)
	for _, gamma := range []float64{0.1, 0.5, 0.9} {
		p := adaptivePrivate(t, NewSGD(Constant(0)), 1e-3, 0.01, 1, n,
			AdaptiveClip{TargetQuantile: gamma, LearningRate: 0.05, CountNoise: 1e-3}, 9, nil)
		w, sum := []float64{0}, []float64{0}
		for range 3000 {
			c := p.ClipNorm()
			unclipped := 0
			for _, x := range norms {
				if x <= c {
					unclipped++
				}
			}
			if err := p.StepAdaptive(w, sum, n, unclipped); err != nil {
				t.Fatal(err)
			}
		}
		lo, hi := sorted[int((gamma-0.01)*n)], sorted[int((gamma+0.01)*n)]
		if c := p.ClipNorm(); c < lo || c > hi {
			t.Errorf("γ = %v: C = %v after 3000 steps, want it between the %v and %v quantiles [%v, %v]", gamma, c, gamma-0.01, gamma+0.01, lo, hi)
		}
	}
}

// The gradient noise has standard deviation z_Δ·C_t, with the CURRENT clip norm, while the
// recorder receives z. A zero clipped sum over 40,000 coordinates with q·n = 1 and SGD at
// rate 1 moves the parameters by minus the noise itself.
func TestAdaptiveGradientNoiseIsZDeltaTimesCurrentClip(t *testing.T) {
	const d, z, sigmaB = 40000, 1.0, 0.6
	rec := &fakeRecorder{}
	p := adaptivePrivate(t, NewSGD(Constant(1)), z, 2, 0.1, 10, AdaptiveClip{TargetQuantile: 0.5, CountNoise: sigmaB}, 21, rec)
	zd := math.Pow(1-1/(1.2*1.2), -0.5) // (z⁻² − (2σ_b)⁻²)^(−½) with z = 1, 2σ_b = 1.2
	if got := p.GradientNoiseMultiplier(); math.Abs(got-zd) > 1e-12 {
		t.Fatalf("GradientNoiseMultiplier = %v, want %v", got, zd)
	}
	sum := make([]float64, d)
	for step := range 3 {
		c := p.ClipNorm()
		w := make([]float64, d)
		// batch 1, unclipped 0 or 1: the clip norm moves by e^{±0.2·…} every step.
		if err := p.StepAdaptive(w, sum, 1, step%2); err != nil {
			t.Fatal(err)
		}
		var s2 float64
		for _, x := range w {
			s2 += x * x
		}
		sd := math.Sqrt(s2 / d)
		if want := zd * c; math.Abs(sd-want) > 0.02*want { // relative SE of the SD ≈ 0.35 %
			t.Errorf("step %d: noise SD = %v, want z_Δ·C_t = %v·%v = %v", step, sd, zd, c, want)
		}
		if c == p.ClipNorm() {
			t.Errorf("step %d: C stayed %v", step, c)
		}
	}
	if len(rec.calls) != 3 {
		t.Fatalf("%d records, want 3", len(rec.calls))
	}
	for _, r := range rec.calls {
		if r != (recordCall{0.1, z, 1}) {
			t.Errorf("recorded %v, want (0.1, %v, 1): the ledger takes z, not z_Δ", r, z)
		}
	}
}

// The default η_C and σ_b: with η_C = 0.2 the clip norm moves by a factor in
// [e^{−0.2(1−γ)}, e^{0.2γ}] per step, and σ_b = m/20.
func TestAdaptiveDefaults(t *testing.T) {
	p := adaptivePrivate(t, NewSGD(Constant(0)), 1, 1, 0.01, 25600, AdaptiveClip{TargetQuantile: 0.5}, 1, nil)
	if got := p.CountNoise(); math.Abs(got-12.8) > 1e-12 {
		t.Errorf("default σ_b = %v, want 256/20 = 12.8", got)
	}
	// All 256 examples unclipped: b̃ ≈ 1 (clamped at most), C shrinks by about e^{−0.1}.
	w, sum := []float64{0}, []float64{0}
	if err := p.StepAdaptive(w, sum, 256, 256); err != nil {
		t.Fatal(err)
	}
	if c := p.ClipNorm(); c < math.Exp(-0.1) || c > math.Exp(-0.1+0.2*5*0.05) {
		t.Errorf("C after one all-unclipped step = %v, want ≈ e^{−0.1} = %v", c, math.Exp(-0.1))
	}
}

// A seeded adaptive step resumes bit for bit from its State: the clip norm travels in
// State.Scalars["clip"] with the noise generator.
func TestAdaptiveStateContinuesBitForBit(t *testing.T) {
	cfg := AdaptiveClip{TargetQuantile: 0.7, CountNoise: 3}
	mk := func() *Private {
		return adaptivePrivate(t, NewAdam(Constant(0.01)), 1.3, 0.5, 0.05, 1000, cfg, 77, nil)
	}
	run := func(p *Private, w []float64, from, to int) {
		for step := from; step < to; step++ {
			sum := []float64{float64(step) * 0.1, -1, 0.5}
			if err := p.StepAdaptive(w, sum, 50, step%51); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := mk()
	wa := []float64{1, 2, 3}
	run(a, wa, 0, 5)
	st := a.State()
	if c, ok := st.Scalars["clip"]; !ok || c != a.ClipNorm() {
		t.Fatalf("state scalars %v, want clip = %v", st.Scalars, a.ClipNorm())
	}
	wb := slices.Clone(wa)
	run(a, wa, 5, 12)

	b := mk()
	if err := b.SetState(st.Clone()); err != nil {
		t.Fatal(err)
	}
	run(b, wb, 5, 12)
	if !equalBits(wa, wb) || math.Float64bits(a.ClipNorm()) != math.Float64bits(b.ClipNorm()) {
		t.Errorf("resumed: w = %v, C = %v; uninterrupted: w = %v, C = %v", wb, b.ClipNorm(), wa, a.ClipNorm())
	}
	if !a.State().Equal(b.State()) {
		t.Errorf("states differ: %v vs %v", a.State(), b.State())
	}

	// Bad states change nothing.
	good := b.State()
	for name, mut := range map[string]func(*State){
		"no clip":       func(s *State) { s.Scalars = nil },
		"zero clip":     func(s *State) { s.Scalars = map[string]float64{"clip": 0} },
		"negative clip": func(s *State) { s.Scalars = map[string]float64{"clip": -1} },
		"NaN clip":      func(s *State) { s.Scalars = map[string]float64{"clip": math.NaN()} },
		"extra scalar":  func(s *State) { s.Scalars = map[string]float64{"clip": 1, "b2": 1} },
	} {
		s := good.Clone()
		mut(&s)
		if err := b.SetState(s); !errors.Is(err, ErrState) {
			t.Errorf("%s: SetState err = %v, want ErrState", name, err)
		}
		if !b.State().Equal(good) {
			t.Errorf("%s: a refused state changed the step", name)
		}
	}
	// A fixed-clip step refuses an adaptive state.
	fixed := mustPrivate(t, NewAdam(Constant(0.01)), PrivateConfig{NoiseMultiplier: 1.3, ClipNorm: 0.5,
		SampleRate: 0.05, DatasetSize: 1000, Recorder: &fakeRecorder{}, Noise: NewSeededNoise(77)})
	if err := fixed.SetState(good); !errors.Is(err, ErrState) {
		t.Errorf("fixed clip, adaptive state: err = %v, want ErrState", err)
	}
}

func TestAdaptiveConfigErrors(t *testing.T) {
	base := func(a AdaptiveClip) PrivateConfig {
		return PrivateConfig{NoiseMultiplier: 1, ClipNorm: 1, SampleRate: 0.01, DatasetSize: 25600,
			Recorder: &fakeRecorder{}, Noise: NewSeededNoise(1), Adaptive: &a}
	}
	for name, c := range map[string]struct {
		rule Rule
		cfg  PrivateConfig
		want string
	}{
		"γ = 0":        {NewSGD(Constant(1)), base(AdaptiveClip{TargetQuantile: 0}), "γ = 0"},
		"γ = 1":        {NewSGD(Constant(1)), base(AdaptiveClip{TargetQuantile: 1}), "γ = 1"},
		"γ NaN":        {NewSGD(Constant(1)), base(AdaptiveClip{TargetQuantile: math.NaN()}), "γ = NaN"},
		"η < 0":        {NewSGD(Constant(1)), base(AdaptiveClip{TargetQuantile: 0.5, LearningRate: -1}), "η_C = -1"},
		"σ_b too low":  {NewSGD(Constant(1)), base(AdaptiveClip{TargetQuantile: 0.5, CountNoise: 0.5}), "σ_b = 0.5"},
		"σ_b negative": {NewSGD(Constant(1)), base(AdaptiveClip{TargetQuantile: 0.5, CountNoise: -2}), "σ_b = -2"},
		"ADP-SGD":      {&ADPPolynomial{Eta: 1, A: 19, C: 1}, base(AdaptiveClip{TargetQuantile: 0.5}), "not supported"},
	} {
		_, err := NewPrivate(c.rule, c.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrConfig naming %q", name, err, c.want)
		}
	}
	// z = 0 has no z_Δ.
	cfg := base(AdaptiveClip{TargetQuantile: 0.5})
	cfg.NoiseMultiplier = 0
	if _, err := NewPrivate(NewSGD(Constant(1)), cfg); !errors.Is(err, ErrConfig) {
		t.Errorf("z = 0: err = %v, want ErrConfig", err)
	}

	p := mustPrivate(t, NewSGD(Constant(1)), base(AdaptiveClip{TargetQuantile: 0.5}))
	w, sum := []float64{1}, []float64{0}
	if err := p.Step(w, sum, 3); !errors.Is(err, ErrConfig) {
		t.Errorf("Step on an adaptive step: err = %v, want ErrConfig", err)
	}
	for _, bad := range [][2]int{{3, 4}, {3, -1}, {-1, 0}} {
		if err := p.StepAdaptive(w, sum, bad[0], bad[1]); !errors.Is(err, ErrConfig) {
			t.Errorf("StepAdaptive(batch %d, unclipped %d): err = %v, want ErrConfig", bad[0], bad[1], err)
		}
	}
	if p.State().Step != 0 || w[0] != 1 || p.ClipNorm() != 1 {
		t.Errorf("refused steps changed the state: %v, w = %v, C = %v", p.State(), w, p.ClipNorm())
	}
	fixed := mustPrivate(t, NewSGD(Constant(1)), PrivateConfig{NoiseMultiplier: 1, ClipNorm: 1,
		SampleRate: 0.01, DatasetSize: 100, Recorder: &fakeRecorder{}, Noise: NewSeededNoise(1)})
	if err := fixed.StepAdaptive(w, sum, 1, 1); !errors.Is(err, ErrConfig) {
		t.Errorf("StepAdaptive without adaptive clipping: err = %v, want ErrConfig", err)
	}
	if fixed.ClipNorm() != 1 || fixed.GradientNoiseMultiplier() != 1 || fixed.CountNoise() != 0 || fixed.Adaptive() {
		t.Errorf("fixed clip: ClipNorm %v, GradientNoiseMultiplier %v, CountNoise %v, Adaptive %v",
			fixed.ClipNorm(), fixed.GradientNoiseMultiplier(), fixed.CountNoise(), fixed.Adaptive())
	}
}
