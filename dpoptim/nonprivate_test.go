package dpoptim

import (
	"errors"
	"math"
	"testing"
)

// The baseline divides by the realised batch size and records nothing.
func TestNonPrivateUsesMeanGradient(t *testing.T) {
	np, err := NewNonPrivate(NewSGD(Constant(0.5)))
	if err != nil {
		t.Fatal(err)
	}
	w := []float64{1, 1}
	if err := np.Step(w, []float64{4, -8}, 4); err != nil { // mean (1, −2)
		t.Fatal(err)
	}
	if w[0] != 0.5 || w[1] != 2 {
		t.Errorf("w = %v, want [0.5 2]", w)
	}
	if err := np.Step(w, []float64{4, -8}, 0); err != nil || w[0] != 0.5 || w[1] != 2 {
		t.Errorf("empty batch: err = %v, w = %v; want no update", err, w)
	}
	if s := np.State().Step; s != 1 {
		t.Errorf("step = %v, want 1 (empty batches are not steps)", s)
	}
	if np.Name() != "SGD" {
		t.Errorf("Name() = %q", np.Name())
	}
}

func TestNonPrivateErrors(t *testing.T) {
	if _, err := NewNonPrivate(nil); !errors.Is(err, ErrConfig) {
		t.Errorf("nil rule: %v", err)
	}
	np, _ := NewNonPrivate(NewAdam(Constant(0.1)))
	w := []float64{1, 2}
	for _, c := range []struct {
		sum   []float64
		batch int
		want  error
	}{
		{[]float64{1}, 1, ErrLength},
		{[]float64{1, 1}, -1, ErrConfig},
		{[]float64{math.NaN(), 1}, 1, ErrNonFinite},
	} {
		if err := np.Step(w, c.sum, c.batch); !errors.Is(err, c.want) {
			t.Errorf("Step(%v, %d): err = %v, want %v", c.sum, c.batch, err, c.want)
		}
	}
	if w[0] != 1 || w[1] != 2 {
		t.Errorf("params changed: %v", w)
	}
}

var (
	_ Optimizer = (*Private)(nil)
	_ Optimizer = (*NonPrivate)(nil)
)
