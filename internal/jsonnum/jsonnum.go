// Package jsonnum holds the conversion of a float64 to a JSON value that encoding/json
// can write: JSON has no NaN or ±Inf, so those become null.
package jsonnum

import "math"

// FiniteOrNil returns a pointer to v, or nil (JSON null) when v is NaN or ±Inf.
func FiniteOrNil(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
