package data

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestNormalize(t *testing.T) {
	// Feature maxima are 4 and 2; scaled rows (1/4, 1), (-1, 0), (0, 0) then
	// divided by their norms √(1/16 + 1) and 1; the zero row stays zero.
	ds := &Dataset{X: mat.NewDense(3, 2, []float64{1, 2, -4, 0, 0, 0}), Y: []float64{1, 1, 1}}
	ds.Normalize()
	r := math.Sqrt(1.0/16 + 1)
	want := []float64{0.25 / r, 1 / r, -1, 0, 0, 0}
	for k, w := range want {
		if got := ds.X.RawMatrix().Data[k]; math.Abs(got-w) > 1e-15 {
			t.Errorf("entry %d = %v, want %v", k, got, w)
		}
	}
	if ds.L2Bound != 1 || ds.L1Bound != math.Sqrt2 {
		t.Errorf("bounds %v, %v; want 1, √2", ds.L2Bound, ds.L1Bound)
	}
}

func TestBinaryLabels(t *testing.T) {
	for _, c := range []struct{ in, want []float64 }{
		{[]float64{0, 1, 1, 0}, []float64{-1, 1, 1, -1}},
		{[]float64{2, 1, 2}, []float64{1, -1, 1}},
		{[]float64{-1, 1}, []float64{-1, 1}},
	} {
		ds := &Dataset{Y: append([]float64(nil), c.in...)}
		if err := ds.BinaryLabels(); err != nil {
			t.Fatal(err)
		}
		for i := range c.want {
			if ds.Y[i] != c.want[i] {
				t.Errorf("%v -> %v, want %v", c.in, ds.Y, c.want)
				break
			}
		}
	}
	for _, bad := range [][]float64{{1, 1}, {0, 1, 2}} {
		if err := (&Dataset{Y: bad}).BinaryLabels(); !errors.Is(err, ErrInvalid) {
			t.Errorf("labels %v: error %v, want ErrInvalid", bad, err)
		}
	}
}

func TestValidate(t *testing.T) {
	good := &Dataset{X: mat.NewDense(2, 2, []float64{0.6, 0.8, 1, 0}), Y: []float64{1, -1}, L2Bound: 1, L1Bound: 1.4}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, ds := range map[string]*Dataset{
		"label count": {X: mat.NewDense(2, 2, nil), Y: []float64{1}},
		"nan":         {X: mat.NewDense(1, 2, []float64{math.NaN(), 0}), Y: []float64{1}},
		"inf label":   {X: mat.NewDense(1, 2, nil), Y: []float64{math.Inf(1)}},
		"L2 bound":    {X: mat.NewDense(1, 2, []float64{1, 1}), Y: []float64{1}, L2Bound: 1},
		"L1 bound":    {X: mat.NewDense(1, 2, []float64{0.6, 0.8}), Y: []float64{1}, L1Bound: 1},
		"nil":         {},
	} {
		if err := ds.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", name, err)
		}
	}
}

func TestCenterLabels(t *testing.T) {
	ds := &Dataset{Y: []float64{1, 2, 6}}
	if m := ds.CenterLabels(); m != 3 || ds.Y[0] != -2 || ds.Y[2] != 3 {
		t.Errorf("mean %v, labels %v", m, ds.Y)
	}
}
