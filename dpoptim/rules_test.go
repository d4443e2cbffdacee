package dpoptim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/privtrain/privtrain/smoothing"
)

type ruleCase struct {
	name string
	make func() Rule
	// slowWithSmoothing: the schedule cannot reach 1e-6 in the test's budget once
	// smoothing shrinks the smallest curvature (a/t decays like t^(−a·λ_min)).
	slowWithSmoothing bool
}

// ruleCases returns fresh instances of every rule, tuned for the quadratic of
// TestRulesConvergeWithoutNoise (curvatures in [0.5, 2], so L = 2, μ = 0.5).
func ruleCases() []ruleCase {
	return []ruleCase{
		{"SGD", func() Rule { return NewSGD(Constant(0.5)) }, false},
		{"SGD+momentum", func() Rule { return &SGD{LearningRate: Constant(0.3), Momentum: 0.5} }, false},
		{"SGD step decay", func() Rule { return NewSGD(StepDecay{Initial: 0.9, At: 20, Factor: 0.1}) }, false},
		{"SGD a/t", func() Rule { return NewSGD(InverseTime{A: 4}) }, true},
		{"Adam", func() Rule { return NewAdam(StepDecay{Initial: 0.05, At: 300, Factor: 0.1}) }, false},
		{"HeavyBall", func() Rule { return &HeavyBall{LearningRate: Constant(0.5), Momentum: 0.3} }, false},
		{"Nesterov", func() Rule { return &Nesterov{LearningRate: Constant(0.5), Momentum: NesterovMomentum(0.5, 0.5)} }, false},
		{"ADP polynomial", func() Rule { return &ADPPolynomial{Eta: 0.9, A: 1, C: 0.01} }, false},
		{"ADP AdaGrad-norm", func() Rule { return &ADPAdaGradNorm{Eta: 1, B0: 1, Nu: 1e-12, C: 1} }, false},
		{"ADP √t decay", func() Rule { return &ADPSqrtDecay{Eta: 9, Start: 0.1, End: 1e-10, Steps: 5000} }, false},
	}
}

// With z = 0 every rule, with and without Laplacian smoothing, reaches the known optimum
// of a strongly convex quadratic to 1e-6.
func TestRulesConvergeWithoutNoise(t *testing.T) {
	const d, steps = 10, 5000
	f := newQuadratic(d, 0.5, 2, 1)
	for _, c := range ruleCases() {
		for _, sigma := range []float64{0, 1} {
			t.Run(fmt.Sprintf("%s/σ=%v", c.name, sigma), func(t *testing.T) {
				if sigma > 0 && c.slowWithSmoothing {
					t.Skip("schedule too slow for the smoothed problem")
				}
				cfg := PrivateConfig{NoiseMultiplier: 0, ClipNorm: 1, SampleRate: 0.25, DatasetSize: 40,
					Recorder: &fakeRecorder{}, Noise: NewSeededNoise(1)}
				if sigma > 0 {
					lap, err := smoothing.NewLaplacian[float64](sigma, []smoothing.Tensor{{Name: "w", Shape: []int{d}}})
					if err != nil {
						t.Fatal(err)
					}
					cfg.Smoother = lap
				}
				p := mustPrivate(t, c.make(), cfg)
				w := make([]float64, d)
				sum := make([]float64, d)
				for range steps {
					f.gradSum(sum, w, 0.25*40)
					if err := p.Step(w, sum, 10); err != nil {
						t.Fatal(err)
					}
				}
				if n, ok := p.Rule().(*Nesterov); ok {
					// The parameters hold the extrapolated point; the iterate is in the state.
					if e := f.maxError(n.x); e > 1e-6 {
						t.Errorf("Nesterov iterate x: max |x − x*| = %g", e)
					}
				}
				if e := f.maxError(w); e > 1e-6 {
					t.Errorf("after %d steps max |w − w*| = %g, want ≤ 1e-6", steps, e)
				}
			})
		}
	}
}

func TestSchedules(t *testing.T) {
	cases := []struct {
		s    Schedule
		t    int
		want float64
	}{
		{Constant(0.15), 12345, 0.15},
		{StepDecay{Initial: 0.15, At: 10000, Factor: 0.1}, 9999, 0.15},
		{StepDecay{Initial: 0.15, At: 10000, Factor: 0.1}, 10000, 0.015},
		{InverseTime{A: 2}, 0, 2},
		{InverseTime{A: 2}, 9, 0.2},
		{InverseSqrt{Eta: 1, A: 20, C: 1}, 5, 0.2},
		{InverseSqrt{Eta: 3, A: 2, C: 0.5}, 4, 1.5},
	}
	for _, c := range cases {
		if got := c.s.Rate(c.t); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%T%+v.Rate(%d) = %v, want %v", c.s, c.s, c.t, got, c.want)
		}
	}
}

// SGD with momentum, two steps by hand: v₁ = g₁, w₁ = w₀ − ηg₁; v₂ = μg₁ + g₂, w₂ = w₁ − ηv₂.
func TestSGDMomentumByHand(t *testing.T) {
	s := &SGD{LearningRate: Constant(0.5), Momentum: 0.9}
	w := []float64{1, -2}
	if err := s.Step(w, []float64{2, 4}); err != nil {
		t.Fatal(err)
	}
	if err := s.Step(w, []float64{-1, 1}); err != nil {
		t.Fatal(err)
	}
	// w₁ = (0, −4); v₂ = (0.8, 4.6); w₂ = (−0.4, −6.3).
	want := []float64{-0.4, -6.3}
	for i := range w {
		if math.Abs(w[i]-want[i]) > 1e-15 {
			t.Errorf("w = %v, want %v", w, want)
			break
		}
	}
}

// Adam's first step moves each coordinate by η·g/(|g| + ε/√(1−β₂)) against the gradient
// (bias corrections m̂ = g, v̂ = g²). The second step follows Kingma and Ba's Algorithm 1
// with the bias-corrected moments and ε̂ = ε/√(1−β₂ᵗ), which is TF1's form, written out
// here independently.
func TestAdamByHand(t *testing.T) {
	const eta = 0.01
	a := NewAdam(Constant(eta))
	g1 := []float64{0.5, -1e-7, 3}
	g2 := []float64{-0.25, 2e-7, 3}
	w := []float64{0, 0, 0}
	if err := a.Step(w, g1); err != nil {
		t.Fatal(err)
	}
	for i, g := range g1 {
		want := -eta * g / (math.Abs(g) + 1e-8/math.Sqrt(1-0.999))
		if math.Abs(w[i]-want) > 1e-17 {
			t.Errorf("first step w[%d] = %v, want %v", i, w[i], want)
		}
	}
	first := append([]float64(nil), w...)
	if err := a.Step(w, g2); err != nil {
		t.Fatal(err)
	}
	for i := range w {
		m := 0.9*0.1*g1[i] + 0.1*g2[i]
		v := 0.999*0.001*g1[i]*g1[i] + 0.001*g2[i]*g2[i]
		mHat, vHat := m/(1-0.81), v/(1-0.999*0.999)
		epsHat := 1e-8 / math.Sqrt(1-0.999*0.999)
		want := first[i] - eta*mHat/(math.Sqrt(vHat)+epsHat)
		if math.Abs(w[i]-want) > 1e-12*math.Abs(want) {
			t.Errorf("second step w[%d] = %v, want %v", i, w[i], want)
		}
	}
}

// randomGradients returns a fixed sequence of gradient vectors for rule comparisons.
func randomGradients(n, d int, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 5))
	gs := make([][]float64, n)
	for i := range gs {
		gs[i] = make([]float64, d)
		for j := range gs[i] {
			gs[i][j] = rng.NormFloat64()
		}
	}
	return gs
}

// Heavy ball equals its "smoothed noisy gradient" form, eqs. (14)–(15) of the accelerated
// paper: u_t = βu_{t−1} + (1−β)g_t, x_{t+1} = x_t − (α/(1−β))u_t, u_{−1} = 0.
func TestHeavyBallSmoothedGradientForm(t *testing.T) {
	const alpha, beta, d = 0.1, 0.7, 6
	h := &HeavyBall{LearningRate: Constant(alpha), Momentum: beta}
	x := make([]float64, d)
	xs := make([]float64, d)
	u := make([]float64, d)
	for _, g := range randomGradients(200, d, 3) {
		if err := h.Step(x, g); err != nil {
			t.Fatal(err)
		}
		for i := range xs {
			u[i] = beta*u[i] + (1-beta)*g[i]
			xs[i] -= alpha / (1 - beta) * u[i]
		}
	}
	for i := range x {
		if math.Abs(x[i]-xs[i]) > 1e-12*math.Max(1, math.Abs(xs[i])) {
			t.Fatalf("x[%d]: heavy ball %v, smoothed-gradient form %v", i, x[i], xs[i])
		}
	}
}

// With a constant rate, SGD's momentum (v ← μv + g, w ← w − ηv) and heavy ball with β = μ
// produce the same iterates.
func TestSGDMomentumEqualsHeavyBallAtConstantRate(t *testing.T) {
	s := &SGD{LearningRate: Constant(0.05), Momentum: 0.8}
	h := &HeavyBall{LearningRate: Constant(0.05), Momentum: 0.8}
	ws, wh := make([]float64, 5), make([]float64, 5)
	for _, g := range randomGradients(300, 5, 4) {
		if err := s.Step(ws, g); err != nil {
			t.Fatal(err)
		}
		if err := h.Step(wh, g); err != nil {
			t.Fatal(err)
		}
	}
	for i := range ws {
		if math.Abs(ws[i]-wh[i]) > 1e-12*math.Max(1, math.Abs(ws[i])) {
			t.Fatalf("w[%d]: SGD+momentum %v, heavy ball %v", i, ws[i], wh[i])
		}
	}
}

// Nesterov against eq. (27) of the accelerated paper written with explicit x_{t−1}, x_t
// and the gradient of a quadratic taken at z_t.
func TestNesterovEquation27(t *testing.T) {
	const d = 8
	f := newQuadratic(d, 0.5, 2, 7)
	alpha, beta := 0.3, 0.6
	n := &Nesterov{LearningRate: Constant(alpha), Momentum: beta}
	params := make([]float64, d)
	for i := range params {
		params[i] = 3
	}
	xPrev := append([]float64(nil), params...)
	x := append([]float64(nil), params...)
	g := make([]float64, d)
	for range 50 {
		f.gradSum(g, params, 1)
		if err := n.Step(params, g); err != nil {
			t.Fatal(err)
		}
		z := make([]float64, d)
		for i := range z {
			z[i] = (1+beta)*x[i] - beta*xPrev[i]
		}
		f.gradSum(g, z, 1)
		xPrev, x = x, make([]float64, d)
		for i := range x {
			x[i] = z[i] - alpha*g[i]
		}
	}
	for i := range x {
		zNext := (1+beta)*x[i] - beta*xPrev[i]
		if math.Abs(params[i]-zNext) > 1e-12 || math.Abs(n.x[i]-x[i]) > 1e-12 {
			t.Fatalf("coordinate %d: params %v vs z %v, state x %v vs %v", i, params[i], zNext, n.x[i], x[i])
		}
	}
}

// The momentum of Theorem 4.1; oracle from the digest §2.4 (μ = 1, L = 20, α = 1/L).
func TestNesterovMomentum(t *testing.T) {
	if got := NesterovMomentum(0.05, 1); math.Abs(got-0.634512) > 5e-7 {
		t.Errorf("NesterovMomentum(0.05, 1) = %v, want 0.634512", got)
	}
}

// With β = 0 heavy ball and Nesterov are plain SGD, bit for bit (digest §7.11).
func TestMomentumZeroIsSGD(t *testing.T) {
	for _, r := range []Rule{&HeavyBall{LearningRate: InverseTime{A: 0.7}, Momentum: 0}, &Nesterov{LearningRate: InverseTime{A: 0.7}, Momentum: 0}} {
		s := NewSGD(InverseTime{A: 0.7})
		wr, ws := make([]float64, 4), make([]float64, 4)
		for _, g := range randomGradients(100, 4, 6) {
			if err := r.Step(wr, g); err != nil {
				t.Fatal(err)
			}
			if err := s.Step(ws, g); err != nil {
				t.Fatal(err)
			}
		}
		if !equalBits(wr, ws) {
			t.Errorf("%s with β = 0: %v, SGD: %v", r.Name(), wr, ws)
		}
	}
}

// TestUpdatesRoundEachProduct: SGD, HeavyBall (β = 0) and Nesterov (β = 0) move each
// parameter by the rounded product, p − round(η·g), not by a fused multiply-add
// (math.FMA, one rounding), which Go may emit on arm64: on values where the two differ,
// the rules give the two-rounding result on every architecture.
func TestUpdatesRoundEachProduct(t *testing.T) {
	const eta = 0.7
	rng := rand.New(rand.NewPCG(3, 4))
	var p, g []float64
	for len(p) < 64 {
		pv, gv := rng.NormFloat64(), rng.NormFloat64()
		if math.FMA(-eta, gv, pv) != pv-roundedProduct(eta, gv) {
			p, g = append(p, pv), append(g, gv)
		}
	}
	want := make([]float64, len(p))
	for i := range p {
		want[i] = p[i] - roundedProduct(eta, g[i])
	}
	for _, r := range []Rule{NewSGD(Constant(eta)), &HeavyBall{LearningRate: Constant(eta)}, &Nesterov{LearningRate: Constant(eta)}} {
		w := append([]float64(nil), p...)
		if err := r.Step(w, g); err != nil {
			t.Fatal(err)
		}
		if !equalBits(w, want) {
			t.Errorf("%s: a step fused the product into the update", r.Name())
		}
	}
}

// roundedProduct is a·b rounded to float64 (the conversion forbids fusing it further).
func roundedProduct(a, b float64) float64 { return float64(a * b) }

func TestRuleErrors(t *testing.T) {
	bad := []Rule{
		NewSGD(nil),
		NewSGD(Constant(-1)),
		NewSGD(Constant(math.NaN())),
		NewSGD(Constant(math.Inf(1))),
		&SGD{LearningRate: Constant(0.1), Momentum: 1},
		&SGD{LearningRate: Constant(0.1), Momentum: -0.1},
		&Adam{LearningRate: Constant(0.1), Beta1: 0.9, Beta2: 1, Epsilon: 1e-8},
		&Adam{LearningRate: Constant(0.1), Beta1: 0.9, Beta2: 0.999, Epsilon: 0},
		&HeavyBall{LearningRate: Constant(0.1), Momentum: math.NaN()},
		&Nesterov{LearningRate: Constant(0.1), Momentum: 1.5},
		&ADPPolynomial{Eta: 0, A: 1, C: 1},
		&ADPPolynomial{Eta: 1, A: 0, C: 0},
		&ADPPolynomial{Eta: 1, A: -1, C: 1},
		&ADPAdaGradNorm{Eta: 1, B0: 1, Nu: 0, C: 1},
		&ADPAdaGradNorm{Eta: 1, B0: 0, Nu: 1e-3, C: 0},
		&ADPAdaGradNorm{Eta: math.Inf(1), B0: 1, Nu: 1e-3, C: 1},
	}
	for _, r := range bad {
		w := []float64{1, 2}
		if err := r.Step(w, []float64{1, 1}); !errors.Is(err, ErrConfig) {
			t.Errorf("%s %+v: err = %v, want ErrConfig", r.Name(), r, err)
		}
		if w[0] != 1 || w[1] != 2 {
			t.Errorf("%s: params changed on error: %v", r.Name(), w)
		}
	}
	for _, c := range ruleCases() {
		r := c.make()
		if err := r.Step([]float64{1, 2}, []float64{1}); !errors.Is(err, ErrLength) {
			t.Errorf("%s: mismatched lengths: err = %v, want ErrLength", c.name, err)
		}
		if err := r.Step([]float64{1, 2}, []float64{1, 1}); err != nil {
			t.Fatal(err)
		}
		if _, stateful := r.(*ADPPolynomial); stateful {
			continue // keeps no vectors, so any length is fine
		}
		if _, stateful := r.(*ADPAdaGradNorm); stateful {
			continue
		}
		if _, stateful := r.(*ADPSqrtDecay); stateful {
			continue
		}
		if c.name == "SGD" || c.name == "SGD step decay" || c.name == "SGD a/t" {
			continue // plain SGD keeps no vectors either
		}
		if err := r.Step([]float64{1, 2, 3}, []float64{1, 1, 1}); !errors.Is(err, ErrLength) {
			t.Errorf("%s: length changed between steps: err = %v, want ErrLength", c.name, err)
		}
	}
}

// A state round-trips, and malformed states are refused without changing the rule.
func TestRuleSetState(t *testing.T) {
	for _, c := range ruleCases() {
		r := c.make()
		for _, g := range randomGradients(3, 4, 8) {
			if err := r.Step(make([]float64, 4), g); err != nil {
				t.Fatal(err)
			}
		}
		state := r.State()
		if got := state.Step; got != 3 {
			t.Errorf("%s: state step = %v, want [3]", c.name, got)
		}
		fresh := c.make()
		if err := fresh.SetState(state); err != nil {
			t.Fatalf("%s: SetState(State()): %v", c.name, err)
		}
		before := fresh.State()
		edit := func(f func(s *State)) State {
			s := state.Clone()
			f(&s)
			return s
		}
		// The map-era cases nil, step 1.5, step [1 2] and step NaN cannot be written as a
		// State (Step is an int); nn's checkpoint codec, which reads the step from a float
		// tensor, refuses them (nn's TestLoadInconsistent).
		bad := []State{
			edit(func(s *State) { s.Vectors = withKey(s.Vectors, "bogus", []float64{1}) }),
			edit(func(s *State) { s.Step = -1 }),
			edit(func(s *State) { s.Noise = []byte{1}; s.Rule = &State{} }), // a Private's fields
		}
		if _, ok := state.Vectors["m"]; ok { // Adam: moments of different lengths
			bad = append(bad, edit(func(s *State) { s.Vectors["m"] = []float64{1, 2, 3} }),
				edit(func(s *State) { s.Vectors["v"] = nil }))
		}
		if _, ok := state.Scalars["b2"]; ok {
			bad = append(bad, edit(func(s *State) { s.Scalars["b2"] = -1 }),
				edit(func(s *State) { s.Scalars["b2"] = math.Inf(1) }))
		}
		for _, s := range bad {
			err := fresh.SetState(s)
			if !errors.Is(err, ErrState) {
				t.Errorf("%s: SetState(%v): err = %v, want ErrState", c.name, s, err)
			}
			if !reflect.DeepEqual(fresh.State(), before) {
				t.Errorf("%s: failed SetState changed the state", c.name)
			}
		}
	}
}

func withKey(state map[string][]float64, key string, v []float64) map[string][]float64 {
	out := make(map[string][]float64, len(state)+1)
	for k, x := range state {
		out[k] = x
	}
	out[key] = v
	return out
}
