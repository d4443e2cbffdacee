package clipping_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/privtrain/privtrain/clipping"
)

// The descriptions are those that plans and checkpoints store (a checkpoint written
// before the rules described themselves holds "flat C=1"), and Copy shares nothing.
func TestRuleStringCopyFits(t *testing.T) {
	if got := fmt.Sprint(clipping.Flat{C: 1}); got != "flat C=1" {
		t.Errorf("Flat: %q", got)
	}
	if got := fmt.Sprint(&clipping.Flat{C: 0.5}); got != "flat C=0.5" {
		t.Errorf("*Flat: %q", got)
	}
	if got := fmt.Sprint(clipping.PerLayer{C: []float64{0.5, 2}}); got != "per-layer C=[0.5 2]" {
		t.Errorf("PerLayer: %q", got)
	}
	c := []float64{1, 2}
	for _, r := range []clipping.Rule{clipping.PerLayer{C: c}, &clipping.PerLayer{C: c}} {
		cp := clipping.Copy(r)
		c[0] = 100
		if cp.Bound() != math.Sqrt(5) {
			t.Errorf("Copy(%T) shares its thresholds: bound %v after the caller's change", r, cp.Bound())
		}
		c[0] = 1
	}
	f := &clipping.Flat{C: 3}
	cp := clipping.Copy(f)
	f.C = 7
	if cp.Bound() != 3 {
		t.Errorf("Copy(*Flat) follows the caller: bound %v", cp.Bound())
	}
	var nilRule *clipping.PerLayer
	if clipping.Copy(nilRule) != clipping.Rule(nilRule) {
		t.Error("Copy of a nil *PerLayer is not the same nil")
	}
	for _, tc := range []struct {
		r      clipping.Rule
		layers int
		ok     bool
	}{
		{clipping.Flat{C: 1}, 3, true},
		{clipping.Flat{C: 0}, 3, false},
		{clipping.Flat{C: math.Inf(1)}, 3, false},
		{clipping.PerLayer{C: []float64{1, 1}}, 2, true},
		{clipping.PerLayer{C: []float64{1, 1}}, 3, false},
		{clipping.PerLayer{C: []float64{1, math.NaN()}}, 2, false},
	} {
		if err := clipping.Fits(tc.r, tc.layers); (err == nil) != tc.ok || (err != nil && !errors.Is(err, clipping.ErrRule)) {
			t.Errorf("Fits(%v, %d) = %v, want ok %v", tc.r, tc.layers, err, tc.ok)
		}
	}
}

func TestRuleBounds(t *testing.T) {
	if b := (clipping.Flat{C: 1.5}).Bound(); b != 1.5 {
		t.Errorf("Flat{1.5}.Bound() = %v", b)
	}
	if b := (clipping.PerLayer{C: []float64{3, 4}}).Bound(); b != 5 {
		t.Errorf("PerLayer{3, 4}.Bound() = %v, want 5", b)
	}
	r := clipping.PerLayerEqual(2, 4)
	for _, c := range r.C {
		if c != 1 {
			t.Errorf("PerLayerEqual(2, 4) threshold %v, want 2/sqrt(4) = 1", c)
		}
	}
	if b := clipping.PerLayerEqual(1, 3).Bound(); math.Abs(b-1) > 1e-15 {
		t.Errorf("PerLayerEqual(1, 3).Bound() = %v, want 1", b)
	}
}
