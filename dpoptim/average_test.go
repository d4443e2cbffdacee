package dpoptim

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// The warm-up weights by hand: β_t = min(β, t/(9+t)) for t = 1, 2, …
func TestEMAWeights(t *testing.T) {
	e := &EMA{Decay: 0.5}
	for k, want := range []float64{0.1, 2.0 / 11, 3.0 / 12, 4.0 / 13, 5.0 / 14, 6.0 / 15, 7.0 / 16, 8.0 / 17, 0.5, 0.5} {
		if got := e.Weight(k + 1); math.Abs(got-want) > 1e-16 {
			t.Errorf("Weight(%d) = %v, want %v", k+1, got, want)
		}
	}
	// β = 0.999 is reached when t/(9+t) ≥ 0.999, at t = 8991.
	f := &EMA{Decay: 0.999}
	if w := f.Weight(8990); !(w < 0.999) {
		t.Errorf("Weight(8990) = %v, want < 0.999", w)
	}
	if w := f.Weight(8991); w != 0.999 {
		t.Errorf("Weight(8991) = %v, want 0.999", w)
	}
}

// The average equals its unrolled form: θ̄_T = (Π_{s≤T} β_s)·θ₀ + Σ_t (1−β_t)·Π_{s>t} β_s·θ_t,
// with the weights written out independently of EMA.Weight.
func TestEMABruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const d, T, beta = 5, 40, 0.9
	thetas := make([][]float64, T+1)
	for k := range thetas {
		thetas[k] = make([]float64, d)
		for i := range thetas[k] {
			thetas[k][i] = rng.NormFloat64()
		}
	}
	e := &EMA{Decay: beta}
	if err := e.Init(thetas[0]); err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= T; k++ {
		if err := e.Update(thetas[k]); err != nil {
			t.Fatal(err)
		}
	}
	w := func(s int) float64 { return math.Min(beta, float64(s)/float64(9+s)) }
	want := make([]float64, d)
	for k := 0; k <= T; k++ {
		c := 1.0
		if k > 0 {
			c = 1 - w(k)
		}
		for s := k + 1; s <= T; s++ {
			c *= w(s)
		}
		for i := range want {
			want[i] += c * thetas[k][i]
		}
	}
	got := make([]float64, d)
	if err := e.Average(got); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-13 {
			t.Errorf("average[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if e.Steps() != T {
		t.Errorf("Steps = %d, want %d", e.Steps(), T)
	}
	// A constant sequence is its own average.
	c := &EMA{Decay: 0.99}
	_ = c.Init([]float64{3, -1})
	for range 50 {
		_ = c.Update([]float64{3, -1})
	}
	_ = c.Average(got[:2])
	if got[0] != 3 || got[1] != -1 {
		t.Errorf("average of a constant sequence = %v", got[:2])
	}
}

func TestEMAStateRoundTrip(t *testing.T) {
	a := &EMA{Decay: 0.95}
	_ = a.Init([]float64{1, 2, 3})
	_ = a.Update([]float64{2, 2, 2})
	_ = a.Update([]float64{0, 1, 5})
	b := &EMA{Decay: 0.95}
	if err := b.SetState(a.State()); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]float64{{1, 1, 1}, {4, -2, 0}} {
		_ = a.Update(p)
		_ = b.Update(p)
	}
	x, y := make([]float64, 3), make([]float64, 3)
	_ = a.Average(x)
	_ = b.Average(y)
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("restored average %v, uninterrupted %v", y, x)
		}
	}
	if !a.State().Equal(b.State()) {
		t.Errorf("states differ: %v vs %v", a.State(), b.State())
	}
	// An unstarted average round-trips as unstarted.
	u := &EMA{Decay: 0.95}
	if err := u.SetState((&EMA{Decay: 0.95}).State()); err != nil || u.Started() {
		t.Errorf("unstarted state: err %v, started %v", err, u.Started())
	}
}

func TestEMARefusals(t *testing.T) {
	for _, decay := range []float64{0, -0.1, 1, 1.5, math.NaN(), math.Inf(1)} {
		e := &EMA{Decay: decay}
		if err := e.Init([]float64{1}); !errors.Is(err, ErrConfig) {
			t.Errorf("decay %v: Init err = %v, want ErrConfig", decay, err)
		}
		if e.Started() {
			t.Errorf("decay %v: started after a refused Init", decay)
		}
	}
	e := &EMA{Decay: 0.9}
	if err := e.Update([]float64{1}); !errors.Is(err, ErrConfig) {
		t.Errorf("Update before Init: err = %v, want ErrConfig", err)
	}
	if err := e.Average([]float64{0}); !errors.Is(err, ErrConfig) {
		t.Errorf("Average before Init: err = %v, want ErrConfig", err)
	}
	if err := e.Init([]float64{1, math.NaN()}); !errors.Is(err, ErrNonFinite) {
		t.Errorf("Init with NaN: err = %v, want ErrNonFinite", err)
	}
	_ = e.Init([]float64{1, 2})
	if err := e.Update([]float64{1}); !errors.Is(err, ErrLength) || e.Steps() != 0 {
		t.Errorf("Update of the wrong length: err = %v, steps %d", err, e.Steps())
	}
	good := e.State()
	for name, s := range map[string]State{
		"other decay":       {Step: 1, Vectors: map[string][]float64{"average": {1, 2}}, Scalars: map[string]float64{"decay": 0.8}},
		"no decay":          {Step: 1, Vectors: map[string][]float64{"average": {1, 2}}},
		"steps, no average": {Step: 3, Vectors: map[string][]float64{"average": nil}, Scalars: map[string]float64{"decay": 0.9}},
		"NaN average":       {Step: 1, Vectors: map[string][]float64{"average": {1, math.NaN()}}, Scalars: map[string]float64{"decay": 0.9}},
		"negative step":     {Step: -1, Vectors: map[string][]float64{"average": {1, 2}}, Scalars: map[string]float64{"decay": 0.9}},
		"unknown vector":    {Step: 1, Vectors: map[string][]float64{"average": {1, 2}, "m": {1, 2}}, Scalars: map[string]float64{"decay": 0.9}},
		"missing vector":    {Step: 0, Scalars: map[string]float64{"decay": 0.9}},
	} {
		if err := e.SetState(s); !errors.Is(err, ErrState) {
			t.Errorf("%s: err = %v, want ErrState", name, err)
		}
		if !e.State().Equal(good) {
			t.Errorf("%s: state changed on a refused SetState", name)
		}
	}
}
