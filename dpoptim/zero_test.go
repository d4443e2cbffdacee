package dpoptim

import (
	"errors"
	"math"
	"testing"
)

// A zero configuration field means a documented default or is refused; it never runs a
// silently different algorithm.
func TestZeroValues(t *testing.T) {
	// &Adam{LearningRate: …} would run with β₁ = β₂ = ε = 0: refused, params unchanged.
	w := []float64{1, 2}
	if err := (&Adam{LearningRate: Constant(0.1)}).Step(w, []float64{1, 1}); !errors.Is(err, ErrConfig) {
		t.Errorf("Adam without β₂, ε: err = %v, want ErrConfig", err)
	}
	if w[0] != 1 || w[1] != 2 {
		t.Errorf("refused step changed params to %v", w)
	}
	// β₁ = 0 with β₂, ε set is legitimate: m = g, v = g², and step 1 moves each
	// coordinate by η·√(1−β₂)/(1−0)·|g|/(√(1−β₂)|g| + ε) ≈ η·sign(g) (closed form).
	a := &Adam{LearningRate: Constant(0.1), Beta2: 0.999, Epsilon: 1e-8}
	w = []float64{1, 2}
	if err := a.Step(w, []float64{3, -4}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{1 - 0.1*3/(3+1e-8/math.Sqrt(0.001)), 2 + 0.1*4/(4+1e-8/math.Sqrt(0.001))} {
		if math.Abs(w[i]-want) > 1e-12 {
			t.Errorf("β₁ = 0: w[%d] = %v, want %v", i, w[i], want)
		}
	}
	// NewAdam's defaults are PyTorch's.
	if d := NewAdam(Constant(1)); d.Beta1 != 0.9 || d.Beta2 != 0.999 || d.Epsilon != 1e-8 {
		t.Errorf("NewAdam defaults β₁ = %v, β₂ = %v, ε = %v", d.Beta1, d.Beta2, d.Epsilon)
	}

	// AdaGrad-norm: Beta 0 means the paper's β = 1, step for step.
	zero := &ADPAdaGradNorm{Eta: 1, B0: 2, Nu: 1e-5, C: 0.5}
	one := &ADPAdaGradNorm{Eta: 1, B0: 2, Nu: 1e-5, C: 0.5, Beta: 1}
	w0, w1 := []float64{1, -1}, []float64{1, -1}
	for _, g := range randomGradients(5, 2, 3) {
		if err := zero.Step(w0, g); err != nil {
			t.Fatal(err)
		}
		if err := one.Step(w1, g); err != nil {
			t.Fatal(err)
		}
	}
	if w0[0] != w1[0] || w0[1] != w1[1] {
		t.Errorf("Beta 0 gives %v, Beta 1 gives %v", w0, w1)
	}

	// The other required fields: refused with ErrConfig.
	for name, r := range map[string]Rule{
		"SGD without a schedule":       &SGD{},
		"HeavyBall without a schedule": &HeavyBall{Momentum: 0.5},
		"Nesterov without a schedule":  &Nesterov{},
		"ADPPolynomial zero":           &ADPPolynomial{},
		"ADPAdaGradNorm without ν":     &ADPAdaGradNorm{Eta: 1, B0: 1},
		"StepDecay without a factor":   &SGD{LearningRate: StepDecay{Initial: 0.1, At: 5}},
	} {
		if err := r.Step([]float64{1}, []float64{1}); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", name, err)
		}
	}
	// Momentum 0 is plain descent, for every momentum rule: w − η·g exactly.
	for name, r := range map[string]Rule{
		"SGD": &SGD{LearningRate: Constant(0.5)}, "HeavyBall": &HeavyBall{LearningRate: Constant(0.5)},
		"Nesterov": &Nesterov{LearningRate: Constant(0.5)},
	} {
		w := []float64{1, 2}
		for range 2 {
			if err := r.Step(w, []float64{1, -2}); err != nil {
				t.Fatal(err)
			}
		}
		if w[0] != 0 || w[1] != 4 {
			t.Errorf("%s with momentum 0: w = %v, want [0 4]", name, w)
		}
	}
}

// The zero Private and NonPrivate refuse to step instead of panicking.
func TestZeroSteps(t *testing.T) {
	w := []float64{1}
	if err := new(Private).Step(w, []float64{1}, 1); !errors.Is(err, ErrConfig) {
		t.Errorf("zero Private: err = %v, want ErrConfig", err)
	}
	if err := new(Private).SetState(State{}); !errors.Is(err, ErrConfig) {
		t.Errorf("zero Private SetState: err = %v, want ErrConfig", err)
	}
	if err := new(NonPrivate).Step(w, []float64{1}, 1); !errors.Is(err, ErrConfig) {
		t.Errorf("zero NonPrivate: err = %v, want ErrConfig", err)
	}
	if w[0] != 1 {
		t.Errorf("w = %v", w)
	}
}
