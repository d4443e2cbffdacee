package data

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"
)

func TestSynthetic(t *testing.T) {
	const n, d = 20000, 20
	ds, err := Synthetic(n, d, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Validate(); err != nil {
		t.Fatal(err) // includes the declared L1 ≤ 20 and L2 ≤ √20 bounds
	}
	if ds.L1Bound != 20 || ds.L2Bound != math.Sqrt(20) {
		t.Errorf("bounds %v %v, want 20 and √20 (the paper's S1 = 40)", ds.L1Bound, ds.L2Bound)
	}
	// Uniform[0,1] covariates: mean 1/2, variance 1/12; the standard error of
	// the mean over n·d draws is 0.29/√(4e5) ≈ 4.6e-4, so 3e-3 is > 6 sd.
	var all []float64
	for i := range n {
		all = append(all, ds.Row(i)...)
	}
	mean := floats.Sum(all) / float64(len(all))
	if math.Abs(mean-0.5) > 3e-3 {
		t.Errorf("covariate mean %v, want 0.5", mean)
	}
	if floats.Min(all) < 0 || floats.Max(all) > 1 {
		t.Errorf("covariates outside [0,1]: %v, %v", floats.Min(all), floats.Max(all))
	}
	for _, y := range ds.Y {
		if y != 1 && y != -1 {
			t.Fatalf("label %v not ±1", y)
		}
	}
	// Same seed, same data; another seed, other data.
	again, _ := Synthetic(n, d, 1)
	other, _ := Synthetic(n, d, 2)
	if !floats.Equal(again.X.RawMatrix().Data, ds.X.RawMatrix().Data) || !floats.Equal(again.Y, ds.Y) {
		t.Error("Synthetic is not deterministic in its seed")
	}
	if floats.Equal(other.X.RawMatrix().Data, ds.X.RawMatrix().Data) {
		t.Error("seeds 1 and 2 gave the same data")
	}
	if _, err := Synthetic(0, 20, 1); err == nil {
		t.Error("n = 0 accepted")
	}
}

// TestSyntheticLabelBalance checks that both classes occur.
func TestSyntheticLabelBalance(t *testing.T) {
	ds, _ := Synthetic(5000, 20, 7)
	pos := 0
	for _, y := range ds.Y {
		if y > 0 {
			pos++
		}
	}
	if pos == 0 || pos == ds.Len() {
		t.Fatalf("all labels equal (%d positive of %d)", pos, ds.Len())
	}
}
