package jsonnum

import (
	"encoding/json"
	"math"
	"testing"
)

// TestFiniteOrNil: finite values (zero, the extremes) keep their value; NaN and ±Inf,
// which encoding/json refuses, encode as null.
func TestFiniteOrNil(t *testing.T) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1.5, -3, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		p := FiniteOrNil(v)
		if p == nil || math.Float64bits(*p) != math.Float64bits(v) {
			t.Errorf("FiniteOrNil(%v) = %v", v, p)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if p := FiniteOrNil(v); p != nil {
			t.Errorf("FiniteOrNil(%v) = %v, want nil", v, *p)
		}
		b, err := json.Marshal(struct{ X *float64 }{FiniteOrNil(v)})
		if err != nil || string(b) != `{"X":null}` {
			t.Errorf("%v encodes as %s, %v", v, b, err)
		}
	}
}
