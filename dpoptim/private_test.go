package dpoptim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/privtrain/privtrain/smoothing"
)

// mnistLayout is the TF Privacy MNIST tutorial CNN (26,010 parameters, digest §6.1).
// *smoothing.Laplacian[float64] is the Smoother of DP-LSSGD and DP-LSAdam.
var _ Smoother = (*smoothing.Laplacian[float64])(nil)

var mnistLayout = []smoothing.Tensor{
	{Name: "conv1/W", Shape: []int{16, 1, 8, 8}}, {Name: "conv1/b", Shape: []int{16}},
	{Name: "conv2/W", Shape: []int{32, 16, 4, 4}}, {Name: "conv2/b", Shape: []int{32}},
	{Name: "dense1/W", Shape: []int{512, 32}}, {Name: "dense1/b", Shape: []int{32}},
	{Name: "dense2/W", Shape: []int{32, 10}}, {Name: "dense2/b", Shape: []int{10}},
}

// Normalisation by the expected batch size, by hand: with z = 0, q = 0.25 and n = 8 the
// gradient is sum/2 whatever the realised batch size, so SGD with rate 0.5 moves
// (1, 1, 1) to 1 − 0.5·(2, −4, 6)/2 = (0.5, 2, −0.5).
func TestPrivateNormalisesByExpectedBatchSize(t *testing.T) {
	rec := &fakeRecorder{}
	p := mustPrivate(t, NewSGD(Constant(0.5)), PrivateConfig{NoiseMultiplier: 0, ClipNorm: 1,
		SampleRate: 0.25, DatasetSize: 8, Recorder: rec, Noise: NewSeededNoise(1)})
	w := []float64{1, 1, 1}
	if err := p.Step(w, []float64{2, -4, 6}, 5); err != nil {
		t.Fatal(err)
	}
	want := []float64{0.5, 2, -0.5}
	for i := range w {
		if math.Abs(w[i]-want[i]) > 1e-15 {
			t.Fatalf("w = %v, want %v", w, want)
		}
	}
	if len(rec.calls) != 1 || rec.calls[0] != (recordCall{0.25, 0, 1}) {
		t.Errorf("recorded %v, want one call (0.25, 0, 1)", rec.calls)
	}
}

// The noisy gradient by hand, from a generator with the same seed: g_i = (s_i + zC·N_i)/(q·n).
func TestPrivateNoisyGradientByHand(t *testing.T) {
	const z, clip, q, n = 1.3, 0.7, 0.01, 3000
	sum := []float64{0.5, -1.5, 2, 0, 3.25}
	p := mustPrivate(t, NewSGD(Constant(1)), PrivateConfig{NoiseMultiplier: z, ClipNorm: clip,
		SampleRate: q, DatasetSize: n, Recorder: &fakeRecorder{}, Noise: NewSeededNoise(11)})
	ref := NewSeededNoise(11)
	w := make([]float64, len(sum))
	for step := range 3 {
		before := append([]float64(nil), w...)
		if err := p.Step(w, sum, 0); err != nil {
			t.Fatal(err)
		}
		for i := range sum {
			g := (sum[i] + z*clip*ref.Normal()) / (q * n)
			if got := before[i] - w[i]; math.Abs(got-g) > 1e-13*math.Abs(g) {
				t.Fatalf("step %d coordinate %d: gradient %v, by hand %v", step, i, got, g)
			}
		}
	}
}

// From prefetchMin parameters the noise is drawn ahead (privrand.PrefetchGaussian): still
// the stream's values in order, by hand from a generator with the same seed, across a save
// (taken while a prefetch is pending) and a restore into a Private of another seed.
func TestPrivateNoiseDrawnAheadByHand(t *testing.T) {
	const z, clip, q, n, d = 1.3, 0.7, 0.01, 3000, prefetchMin
	sum := make([]float64, d)
	for i := range sum {
		sum[i] = float64(i%7) - 3
	}
	cfg := func(seed uint64) PrivateConfig {
		return PrivateConfig{NoiseMultiplier: z, ClipNorm: clip, SampleRate: q, DatasetSize: n,
			Recorder: &fakeRecorder{}, Noise: NewSeededNoise(seed)}
	}
	p := mustPrivate(t, NewSGD(Constant(1)), cfg(11))
	ref := NewSeededNoise(11)
	w := make([]float64, d)
	for step := range 4 {
		if step == 2 { // continue in a restored copy
			saved := p.State()
			p = mustPrivate(t, NewSGD(Constant(1)), cfg(999))
			if err := p.SetState(saved); err != nil {
				t.Fatal(err)
			}
		}
		before := append([]float64(nil), w...)
		if err := p.Step(w, sum, 0); err != nil {
			t.Fatal(err)
		}
		for i := range sum {
			g := (sum[i] + z*clip*ref.Normal()) / (q * n)
			// Rounding (before − w, and ·1/(qn) against /(qn)) is far below 1e-9 of the
			// values; a wrong draw is off by the noise's own scale, zC/(qn) ≈ 0.03.
			if got := before[i] - w[i]; math.Abs(got-g) > 1e-9*(math.Abs(g)+math.Abs(w[i])+math.Abs(before[i])) {
				t.Fatalf("step %d coordinate %d: gradient %v, by hand %v", step, i, got, g)
			}
		}
	}
}

// DP-LSSGD with σ = 0 is DP-SGD: the same seed gives the same iterates, bit for bit.
func TestLSSGDSigmaZeroIsDPSGD(t *testing.T) {
	const d = 26010
	lap, err := smoothing.NewLaplacian[float64](0, mnistLayout)
	if err != nil {
		t.Fatal(err)
	}
	f := newQuadratic(d, 0.5, 2, 3)
	cfg := PrivateConfig{NoiseMultiplier: 1.1, ClipNorm: 1, SampleRate: 256.0 / 60000, DatasetSize: 60000}
	run := func(smoother Smoother) []float64 {
		c := cfg
		c.Recorder, c.Noise, c.Smoother = &fakeRecorder{}, NewSeededNoise(2024), smoother
		p := mustPrivate(t, NewSGD(Constant(0.15)), c)
		w := make([]float64, d)
		sum := make([]float64, d)
		for range 20 {
			f.gradSum(sum, w, 256)
			if err := p.Step(w, sum, 256); err != nil {
				t.Fatal(err)
			}
		}
		return w
	}
	if sgd, lssgd := run(nil), run(lap); !equalBits(sgd, lssgd) {
		t.Error("DP-LSSGD with σ = 0 differs from DP-SGD")
	}
}

// Noise is added BEFORE smoothing (eq. (5)): after A_σ⁻¹ the per-coordinate variance of
// the gradient noise is β(σ, d)·(zC/(q·n))², by Lemma 5 of the DP-LSSGD paper
// (E‖A⁻¹x‖² = dβ). Smoothing first and adding noise after would leave (zC/(q·n))².
func TestPrivateNoiseBeforeSmoothing(t *testing.T) {
	const d, sigma, z = 200000, 1.0, 2.0
	lap, err := smoothing.NewLaplacian[float64](sigma, []smoothing.Tensor{{Name: "w", Shape: []int{d}}})
	if err != nil {
		t.Fatal(err)
	}
	p := mustPrivate(t, NewSGD(Constant(1)), PrivateConfig{NoiseMultiplier: z, ClipNorm: 1, SampleRate: 0.5,
		DatasetSize: 4, Recorder: &fakeRecorder{}, Smoother: lap, Noise: NewSeededNoise(8)})
	w := make([]float64, d)
	if err := p.Step(w, make([]float64, d), 2); err != nil {
		t.Fatal(err)
	}
	energy := 0.0
	for _, x := range w {
		energy += x * x
	}
	beta, err := smoothing.Beta(sigma, d)
	if err != nil {
		t.Fatal(err)
	}
	std := z * 1 / (0.5 * 4)
	if got, want := energy/d, beta*std*std; math.Abs(got/want-1) > 0.02 {
		t.Errorf("per-coordinate noise variance after smoothing %v, want β·(zC/qn)² = %v", got, want)
	}
}

// The smoothed private step equals the hand pipeline: noise, normalise, then A_σ⁻¹ via the
// independent FFT implementation, then SGD.
func TestPrivateSmoothingPipelineByHand(t *testing.T) {
	const d, sigma = 1000, 3.0
	lap, _ := smoothing.NewLaplacian[float64](sigma, []smoothing.Tensor{{Name: "w", Shape: []int{10, 100}}})
	fft, _ := smoothing.NewFFTSolver(d, sigma)
	rng := rand.New(rand.NewPCG(1, 2))
	sum := make([]float64, d)
	for i := range sum {
		sum[i] = rng.NormFloat64()
	}
	p := mustPrivate(t, NewSGD(Constant(0.1)), PrivateConfig{NoiseMultiplier: 0.8, ClipNorm: 2, SampleRate: 0.1,
		DatasetSize: 50, Recorder: &fakeRecorder{}, Smoother: lap, Noise: NewSeededNoise(9)})
	w := make([]float64, d)
	if err := p.Step(w, sum, 0); err != nil {
		t.Fatal(err)
	}
	ref := NewSeededNoise(9)
	g := make([]float64, d)
	for i := range g {
		g[i] = (sum[i] + 0.8*2*ref.Normal()) / 5
	}
	if err := fft.Solve(g, g); err != nil {
		t.Fatal(err)
	}
	for i := range w {
		if want := -0.1 * g[i]; math.Abs(w[i]-want) > 1e-12 {
			t.Fatalf("w[%d] = %v, hand pipeline %v", i, w[i], want)
		}
	}
}

// Every step is recorded once with the sampling rate and its own multiplier, before the
// update; for ADP-SGD z_t = z·(a + c(t+1))^(1/4) and z·(b₀² + (t+1)C)^(1/4).
func TestPrivateRecordsEachStep(t *testing.T) {
	cases := []struct {
		rule Rule
		zt   func(t int) float64
	}{
		{NewSGD(Constant(0.1)), func(int) float64 { return 1.5 }},
		{NewAdam(Constant(0.1)), func(int) float64 { return 1.5 }},
		{&ADPPolynomial{Eta: 1, A: 19, C: 1}, func(t int) float64 { return 1.5 * math.Pow(20+float64(t), 0.25) }},
		{&ADPAdaGradNorm{Eta: 1, B0: 2, Nu: 1e-5, C: 0.5}, func(t int) float64 { return 1.5 * math.Pow(4+0.5*float64(t+1), 0.25) }},
		{&ADPPolynomial{Eta: 1, A: 19, C: 1, ConstantNoise: true}, func(int) float64 { return 1.5 }},
	}
	for _, c := range cases {
		rec := &fakeRecorder{}
		p := mustPrivate(t, c.rule, PrivateConfig{NoiseMultiplier: 1.5, ClipNorm: 1, SampleRate: 0.02,
			DatasetSize: 1000, Recorder: rec, Noise: NewSeededNoise(1)})
		w := make([]float64, 3)
		for range 7 {
			if err := p.Step(w, []float64{1, 2, 3}, 20); err != nil {
				t.Fatal(err)
			}
		}
		if len(rec.calls) != 7 {
			t.Fatalf("%s: %d Record calls for 7 steps", p.Name(), len(rec.calls))
		}
		for i, call := range rec.calls {
			if want := c.zt(i); call.q != 0.02 || call.steps != 1 || math.Abs(call.z-want) > 1e-14*want {
				t.Errorf("%s step %d: recorded %+v, want (0.02, %v, 1)", p.Name(), i, call, want)
			}
		}
	}
}

func TestPrivateNames(t *testing.T) {
	lap, _ := smoothing.NewLaplacian[float64](1, mnistLayout)
	cases := []struct {
		rule     Rule
		smoother Smoother
		want     string
	}{
		{NewSGD(Constant(1)), nil, "DP-SGD"},
		{NewSGD(Constant(1)), lap, "DP-LSSGD"},
		{NewAdam(Constant(1)), nil, "DP-Adam"},
		{NewAdam(Constant(1)), lap, "DP-LSAdam"},
		{&SGD{LearningRate: Constant(1), Momentum: 0.9}, nil, "DP-SGD+momentum"},
		{&HeavyBall{LearningRate: Constant(1), Momentum: 0.5}, nil, "DP-HeavyBall"},
		{&Nesterov{LearningRate: Constant(1), Momentum: 0.5}, nil, "DP-Nesterov"},
		{&ADPPolynomial{Eta: 1, A: 1, C: 1}, nil, "ADP-SGD (polynomial)"},
		{&ADPPolynomial{Eta: 1, A: 1, C: 1}, lap, "ADP-LSSGD (polynomial)"},
		{&ADPPolynomial{Eta: 1, A: 1, C: 1, ConstantNoise: true}, nil, "DP-SGD (polynomial)"},
		{&ADPAdaGradNorm{Eta: 1, B0: 1, Nu: 1, C: 1}, nil, "ADP-SGD (AdaGrad-norm)"},
	}
	for _, c := range cases {
		p := mustPrivate(t, c.rule, PrivateConfig{NoiseMultiplier: 1, ClipNorm: 1, SampleRate: 0.1, DatasetSize: 10,
			Recorder: &fakeRecorder{}, Smoother: c.smoother, Noise: NewSeededNoise(0)})
		if p.Name() != c.want {
			t.Errorf("Name() = %q, want %q", p.Name(), c.want)
		}
	}
	p := mustPrivate(t, NewSGD(Constant(1)), PrivateConfig{NoiseMultiplier: 1, ClipNorm: 1, SampleRate: 0.1,
		DatasetSize: 10, Recorder: &fakeRecorder{}})
	if p.Noise().String() != "secure" {
		t.Errorf("default noise is %q, want secure", p.Noise())
	}
}

// Saving the state mid-run and restoring it into a fresh step (with a different seed) gives
// a bit-identical continuation, for every rule, with and without smoothing.
func TestPrivateSaveRestoreContinuesBitForBit(t *testing.T) {
	const d = 26010
	f := newQuadratic(d, 0.5, 2, 5)
	for _, c := range ruleCases() {
		for _, smooth := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/smoothing=%v", c.name, smooth), func(t *testing.T) {
				newStep := func(seed uint64) (*Private, *fakeRecorder) {
					rec := &fakeRecorder{}
					cfg := PrivateConfig{NoiseMultiplier: 1.1, ClipNorm: 1, SampleRate: 0.01, DatasetSize: 1000,
						Recorder: rec, Noise: NewSeededNoise(seed)}
					if smooth {
						lap, err := smoothing.NewLaplacian[float64](1, mnistLayout)
						if err != nil {
							t.Fatal(err)
						}
						cfg.Smoother = lap
					}
					return mustPrivate(t, c.make(), cfg), rec
				}
				run := func(p *Private, w []float64, steps int) {
					sum := make([]float64, d)
					for range steps {
						f.gradSum(sum, w, 10)
						if err := p.Step(w, sum, 10); err != nil {
							t.Fatal(err)
						}
					}
				}
				p, recP := newStep(77)
				w := make([]float64, d)
				run(p, w, 4)
				saved := p.State()
				savedW := append([]float64(nil), w...)
				run(p, w, 4)

				q, recQ := newStep(12345)
				if err := q.SetState(saved); err != nil {
					t.Fatal(err)
				}
				if q.Noise().String() != "seeded(77)" {
					t.Errorf("restored noise is %q, want seeded(77)", q.Noise())
				}
				run(q, savedW, 4)
				if !equalBits(w, savedW) {
					t.Fatal("restored run differs from the uninterrupted one")
				}
				if fmt.Sprint(recP.calls[4:]) != fmt.Sprint(recQ.calls) {
					t.Errorf("recorded %v after restore, %v uninterrupted", recQ.calls, recP.calls[4:])
				}
			})
		}
	}
}

func TestPrivateConfigErrors(t *testing.T) {
	good := PrivateConfig{NoiseMultiplier: 1, ClipNorm: 1, SampleRate: 0.1, DatasetSize: 100, Recorder: &fakeRecorder{}}
	mutate := func(f func(*PrivateConfig)) PrivateConfig { c := good; f(&c); return c }
	cases := map[string]PrivateConfig{
		"z < 0":   mutate(func(c *PrivateConfig) { c.NoiseMultiplier = -0.1 }),
		"z NaN":   mutate(func(c *PrivateConfig) { c.NoiseMultiplier = math.NaN() }),
		"z Inf":   mutate(func(c *PrivateConfig) { c.NoiseMultiplier = math.Inf(1) }),
		"C = 0":   mutate(func(c *PrivateConfig) { c.ClipNorm = 0 }),
		"C < 0":   mutate(func(c *PrivateConfig) { c.ClipNorm = -1 }),
		"C NaN":   mutate(func(c *PrivateConfig) { c.ClipNorm = math.NaN() }),
		"q = 0":   mutate(func(c *PrivateConfig) { c.SampleRate = 0 }),
		"q > 1":   mutate(func(c *PrivateConfig) { c.SampleRate = 1.5 }),
		"q NaN":   mutate(func(c *PrivateConfig) { c.SampleRate = math.NaN() }),
		"n = 0":   mutate(func(c *PrivateConfig) { c.DatasetSize = 0 }),
		"n < 0":   mutate(func(c *PrivateConfig) { c.DatasetSize = -5 }),
		"no rec.": mutate(func(c *PrivateConfig) { c.Recorder = nil }),
	}
	for name, cfg := range cases {
		if _, err := NewPrivate(NewSGD(Constant(1)), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", name, err)
		}
	}
	if _, err := NewPrivate(nil, good); !errors.Is(err, ErrConfig) {
		t.Errorf("nil rule: err = %v, want ErrConfig", err)
	}
	if _, err := NewPrivate(NewSGD(Constant(1)), mutate(func(c *PrivateConfig) { c.SampleRate = 1 })); err != nil {
		t.Errorf("q = 1 refused: %v", err)
	}
}

// Bad step inputs change nothing and record nothing.
func TestPrivateStepErrors(t *testing.T) {
	lap, _ := smoothing.NewLaplacian[float64](1, []smoothing.Tensor{{Name: "w", Shape: []int{4}}})
	newStep := func(rec *fakeRecorder, rule Rule, smoother Smoother) *Private {
		return mustPrivate(t, rule, PrivateConfig{NoiseMultiplier: 1, ClipNorm: 1, SampleRate: 0.1, DatasetSize: 100,
			Recorder: rec, Smoother: smoother, Noise: NewSeededNoise(1)})
	}
	cases := []struct {
		name      string
		params    []float64
		sum       []float64
		smoother  Smoother
		recErr    error
		want      error
		recording bool
	}{
		{"length mismatch", []float64{1, 2, 3}, []float64{1, 2}, nil, nil, ErrLength, false},
		{"NaN in sum", []float64{1, 2, 3}, []float64{1, math.NaN(), 2}, nil, nil, ErrNonFinite, false},
		{"Inf in sum", []float64{1, 2, 3}, []float64{1, 2, math.Inf(-1)}, nil, nil, ErrNonFinite, false},
		{"smoother length", []float64{1, 2, 3}, []float64{1, 2, 3}, lap, nil, ErrLength, false},
		{"recorder refuses", []float64{1, 2, 3}, []float64{1, 2, 3}, nil, errRecorder, errRecorder, false},
	}
	for _, c := range cases {
		rec := &fakeRecorder{err: c.recErr}
		p := newStep(rec, NewSGD(Constant(1)), c.smoother)
		w := append([]float64(nil), c.params...)
		if err := p.Step(w, c.sum, 1); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if !equalBits(w, c.params) {
			t.Errorf("%s: params changed to %v", c.name, w)
		}
		if len(rec.calls) != 0 {
			t.Errorf("%s: recorded %v", c.name, rec.calls)
		}
	}
	// The parameter count is fixed by the first step.
	p := newStep(&fakeRecorder{}, NewSGD(Constant(1)), nil)
	if err := p.Step(make([]float64, 3), make([]float64, 3), 1); err != nil {
		t.Fatal(err)
	}
	if err := p.Step(make([]float64, 4), make([]float64, 4), 1); !errors.Is(err, ErrLength) {
		t.Errorf("changed length: err = %v, want ErrLength", err)
	}
	// A rule error (negative learning rate) leaves params unchanged.
	w := []float64{1, 2}
	if err := newStep(&fakeRecorder{}, NewSGD(Constant(-1)), nil).Step(w, []float64{1, 1}, 1); !errors.Is(err, ErrConfig) {
		t.Errorf("negative rate: err = %v, want ErrConfig", err)
	}
	if w[0] != 1 || w[1] != 2 {
		t.Errorf("params changed by a failed step: %v", w)
	}
}

func TestPrivateSetStateErrors(t *testing.T) {
	p := mustPrivate(t, NewAdam(Constant(0.1)), PrivateConfig{NoiseMultiplier: 1, ClipNorm: 1, SampleRate: 0.1,
		DatasetSize: 100, Recorder: &fakeRecorder{}, Noise: NewSeededNoise(3)})
	w := make([]float64, 5)
	for range 3 {
		if err := p.Step(w, []float64{1, 2, 3, 4, 5}, 10); err != nil {
			t.Fatal(err)
		}
	}
	good := p.State()
	before := p.State()
	edit := func(f func(s *State)) State {
		s := good.Clone()
		f(&s)
		return s
	}
	// The map-era cases "noise > 255", "noise frac" (a generator byte stored as a float)
	// and "missing step" cannot be written as a State; nn's checkpoint codec, which still
	// reads that encoding, refuses them (nn's TestLoadInconsistent).
	bad := map[string]State{
		"missing noise": edit(func(s *State) { s.Noise = nil }),
		"unknown key":   edit(func(s *State) { s.Vectors = map[string][]float64{"lr": {1}} }),
		"bad step":      edit(func(s *State) { s.Step = -2 }),
		"noise corrupt": edit(func(s *State) { s.Noise = s.Noise[:len(s.Noise)-4] }),
		"rule state":    edit(func(s *State) { s.Rule.Vectors["m"] = []float64{1} }),
		"rule missing":  edit(func(s *State) { delete(s.Rule.Vectors, "v") }),
		"no rule":       edit(func(s *State) { s.Rule = nil }),
	}
	for name, s := range bad {
		if err := p.SetState(s); !errors.Is(err, ErrState) {
			t.Errorf("%s: err = %v, want ErrState", name, err)
		}
		if !reflect.DeepEqual(p.State(), before) {
			t.Errorf("%s: failed SetState changed the step", name)
		}
	}
}

// BenchmarkPrivateStep measures one private step on the MNIST CNN's 26,010 parameters
// (noise, normalisation, optional per-tensor smoothing, SGD), recording into a fake
// recorder; the difference between the two is the cost of smoothing.
func BenchmarkPrivateStep(b *testing.B) {
	const d = 26010
	lap, _ := smoothing.NewLaplacian[float64](1, mnistLayout)
	for _, c := range []struct {
		name     string
		smoother Smoother
	}{{"DP-SGD", nil}, {"DP-LSSGD", lap}} {
		b.Run(c.name, func(b *testing.B) {
			p := mustPrivate(b, NewSGD(Constant(0.15)), PrivateConfig{NoiseMultiplier: 1.1, ClipNorm: 1,
				SampleRate: 256.0 / 60000, DatasetSize: 60000, Recorder: &countingRecorder{}, Smoother: c.smoother,
				Noise: NewSeededNoise(1)})
			w, sum := make([]float64, d), make([]float64, d)
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Step(w, sum, 256); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSmoothingOverhead alternates DP-SGD and DP-LSSGD steps on the MNIST CNN's
// 26,010 parameters (per-tensor smoothing, σ = 1) in one loop, so that both see the same
// machine load, and reports the mean time of each and the cost smoothing adds.
func BenchmarkSmoothingOverhead(b *testing.B) {
	const d = 26010
	lap, _ := smoothing.NewLaplacian[float64](1, mnistLayout)
	newStep := func(s Smoother) *Private {
		return mustPrivate(b, NewSGD(Constant(0.15)), PrivateConfig{NoiseMultiplier: 1.1, ClipNorm: 1,
			SampleRate: 256.0 / 60000, DatasetSize: 60000, Recorder: &countingRecorder{}, Smoother: s,
			Noise: NewSeededNoise(1)})
	}
	plain, smoothed := newStep(nil), newStep(lap)
	w, sum := make([]float64, d), make([]float64, d)
	var tPlain, tSmoothed time.Duration
	for b.Loop() {
		start := time.Now()
		if err := plain.Step(w, sum, 256); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := smoothed.Step(w, sum, 256); err != nil {
			b.Fatal(err)
		}
		tPlain += mid.Sub(start)
		tSmoothed += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tPlain.Microseconds())/n, "DP-SGD-µs/step")
	b.ReportMetric(float64(tSmoothed.Microseconds())/n, "DP-LSSGD-µs/step")
	b.ReportMetric(float64((tSmoothed-tPlain).Microseconds())/n, "added-µs/step")
}

type countingRecorder struct{ n int }

func (c *countingRecorder) Record(float64, float64, int) error { c.n++; return nil }

// DP heavy ball on the quadratic of the accelerated paper's Theorem 3.5 (Q = diag(0.5, 1)),
// with Gaussian gradient noise of variance σ_T² per coordinate: the stationary
// E‖x − x*‖² equals m(α, β) = (σ_T²/2)·Σ_i 2α(1+β)/((1−β)λ_i(2+2β−αλ_i)), digest §2.3
// (oracle values m/σ_T²). 1000 independent copies of the 2-d problem, 3000 steps after a
// burn-in of 300; the standard error is about 0.1 %, the bound 1.5 %.
func TestDPHeavyBallStationaryError(t *testing.T) {
	const copies, burnIn, steps, sigmaT = 1000, 300, 3000, 0.1
	lambda := make([]float64, 2*copies)
	for i := range lambda {
		lambda[i] = 0.5 + 0.5*float64(i%2)
	}
	for _, c := range []struct{ alpha, beta, mOverS2 float64 }{
		{1, 0, 2.333333}, {0.5, 0.3, 1.232450}, {1, 0.5, 3.9},
	} {
		// q·n = 1 and C = 1, so the gradient noise has standard deviation z = σ_T.
		p := mustPrivate(t, &HeavyBall{LearningRate: Constant(c.alpha), Momentum: c.beta}, PrivateConfig{NoiseMultiplier: sigmaT,
			ClipNorm: 1, SampleRate: 0.5, DatasetSize: 2, Recorder: &fakeRecorder{}, Noise: NewSeededNoise(6)})
		x := make([]float64, len(lambda)) // x* = 0
		g := make([]float64, len(lambda))
		var acc float64
		for step := range burnIn + steps {
			for i := range x {
				g[i] = lambda[i] * x[i]
			}
			if err := p.Step(x, g, 1); err != nil {
				t.Fatal(err)
			}
			if step >= burnIn {
				for _, xi := range x {
					acc += xi * xi
				}
			}
		}
		got := acc / steps / copies / (sigmaT * sigmaT)
		if math.Abs(got/c.mOverS2-1) > 0.015 {
			t.Errorf("α=%v β=%v: stationary E‖x−x*‖²/σ_T² = %.4f, Theorem 3.5 m/σ_T² = %v", c.alpha, c.beta, got, c.mOverS2)
		}
	}
}
