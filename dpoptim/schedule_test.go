package dpoptim

import (
	"errors"
	"math"
	"testing"
)

// Cosine against its closed form written out by hand, at t = 0, T/4, T/2, 3T/4, T and
// beyond: cos(0) = 1, cos(π/4) = √2/2, cos(π/2) = 0, cos(3π/4) = −√2/2, cos(π) = −1.
func TestCosineClosedForm(t *testing.T) {
	const initial, final, T = 0.8, 0.05, 1000
	r2 := math.Sqrt2 / 2
	cases := []struct {
		t    int
		want float64
	}{
		{0, initial},
		{T / 4, final + (initial-final)*(1+r2)/2},
		{T / 2, (initial + final) / 2},
		{3 * T / 4, final + (initial-final)*(1-r2)/2},
		{T, final},
		{T + 1, final},
		{10 * T, final},
	}
	s := Cosine{Initial: initial, Final: final, Steps: T}
	for _, c := range cases {
		if got := s.Rate(c.t); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("Cosine.Rate(%d) = %v, want %v", c.t, got, c.want)
		}
	}
	// Final 0: to zero, half way at T/2, odd T (no integer midpoint): the formula at t=1.
	z := Cosine{Initial: 2, Steps: 3}
	if got, want := z.Rate(1), 2*(1+0.5)/2; math.Abs(got-want) > 1e-15 { // cos(π/3) = 1/2
		t.Errorf("Cosine{2, 0, 3}.Rate(1) = %v, want %v", got, want)
	}
	if got := z.Rate(3); got != 0 {
		t.Errorf("Cosine{2, 0, 3}.Rate(3) = %v, want 0", got)
	}
	// Non-increasing over the whole horizon.
	prev := math.Inf(1)
	for k := 0; k <= T+5; k++ {
		r := s.Rate(k)
		if r > prev {
			t.Fatalf("Cosine rate rises at step %d: %v after %v", k, r, prev)
		}
		prev = r
	}
}

// Warmup: linear from Start·base to base over W steps, then After shifted by W.
func TestWarmup(t *testing.T) {
	after := Cosine{Initial: 1.5, Final: 0, Steps: 100}
	w := Warmup{Steps: 10, After: after}
	cases := []struct {
		t    int
		want float64
	}{
		{0, 0},
		{1, 0.15},
		{5, 0.75},
		{9, 1.35},
		{10, 1.5},  // the hand-over: After.Rate(0)
		{60, 0.75}, // After.Rate(50) = (1.5 + 0)/2
		{110, 0},   // After.Rate(100)
		{500, 0},   // beyond both
	}
	for _, c := range cases {
		if got := w.Rate(c.t); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("Warmup{10, 0, cosine}.Rate(%d) = %v, want %v", c.t, got, c.want)
		}
	}
	// A start fraction: PyTorch's LinearLR(start_factor=1/4, total_iters=4) on lr 2 gives
	// 0.5, 0.875, 1.25, 1.625, then 2.
	s := Warmup{Steps: 4, Start: 0.25, After: Constant(2)}
	for k, want := range []float64{0.5, 0.875, 1.25, 1.625, 2, 2} {
		if got := s.Rate(k); math.Abs(got-want) > 1e-15 {
			t.Errorf("Warmup{4, 1/4, 2}.Rate(%d) = %v, want %v", k, got, want)
		}
	}
	// Steps 0: no warm-up at all.
	n := Warmup{After: StepDecay{Initial: 1, At: 3, Factor: 0.5}}
	for k, want := range []float64{1, 1, 1, 0.5} {
		if got := n.Rate(k); got != want {
			t.Errorf("Warmup{0, step decay}.Rate(%d) = %v, want %v", k, got, want)
		}
	}
}

// The zero values the documentation rejects are rejected by the rules at the first step,
// with ErrConfig and the parameters unchanged.
func TestScheduleRefusals(t *testing.T) {
	for name, s := range map[string]Schedule{
		"cosine without steps":             Cosine{Initial: 1},
		"cosine negative steps":            Cosine{Initial: 1, Steps: -1},
		"cosine rising":                    Cosine{Initial: 0.1, Final: 1, Steps: 10},
		"cosine negative final":            Cosine{Initial: 1, Final: -0.1, Steps: 10},
		"cosine NaN initial":               Cosine{Initial: math.NaN(), Steps: 10},
		"cosine infinite initial":          Cosine{Initial: math.Inf(1), Steps: 10},
		"warm-up without a schedule":       Warmup{Steps: 5},
		"warm-up negative steps":           Warmup{Steps: -1, After: Constant(1)},
		"warm-up start above 1":            Warmup{Steps: 5, Start: 1.5, After: Constant(1)},
		"warm-up NaN start":                Warmup{Steps: 5, Start: math.NaN(), After: Constant(1)},
		"warm-up into a bad cosine":        Warmup{Steps: 5, After: Cosine{Initial: 1}},
		"warm-up into a bad step decay":    Warmup{Steps: 5, After: StepDecay{Initial: 1, At: 3}},
		"warm-up into a negative constant": Warmup{Steps: 5, Start: 0.5, After: Constant(-1)},
	} {
		for _, r := range []Rule{NewSGD(s), NewAdam(s)} {
			p := []float64{1, 2}
			if err := r.Step(p, []float64{1, 1}); !errors.Is(err, ErrConfig) {
				t.Errorf("%s, %s: err = %v, want ErrConfig", name, r.Name(), err)
			}
			if p[0] != 1 || p[1] != 2 {
				t.Errorf("%s, %s: parameters changed to %v on error", name, r.Name(), p)
			}
		}
	}
	if r := (Warmup{Steps: 3}).Rate(1); !math.IsNaN(r) {
		t.Errorf("Warmup without After: Rate = %v, want NaN", r)
	}
}

// SGD follows the composed schedule: after W + k steps of gradient 1 from 0, the
// parameter is minus the sum of the rates.
func TestSGDFollowsWarmupCosine(t *testing.T) {
	s := Warmup{Steps: 3, Start: 0.1, After: Cosine{Initial: 0.5, Final: 0.1, Steps: 4}}
	sgd := NewSGD(s)
	p := []float64{0}
	want := 0.0
	for k := 0; k < 9; k++ {
		if err := sgd.Step(p, []float64{1}); err != nil {
			t.Fatal(err)
		}
		// the rates by hand: 0.05, 0.2, 0.35, then 0.5, 0.1+0.4·(1+√2/2)/2, 0.3,
		// 0.1+0.4·(1−√2/2)/2, 0.1, 0.1
		want -= []float64{0.05, 0.2, 0.35, 0.5, 0.1 + 0.2*(1+math.Sqrt2/2), 0.3, 0.1 + 0.2*(1-math.Sqrt2/2), 0.1, 0.1}[k]
		if math.Abs(p[0]-want) > 1e-14 {
			t.Fatalf("after %d steps: %v, want %v", k+1, p[0], want)
		}
	}
}
