package nn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/internal/cpupath"
)

// loadRow copies a row exactly and rejects a NaN or ±Inf wherever it is (in the vector
// part of the check or its tail), naming the example and the value's index, on every CPU
// path and in both dtypes; the largest finite float32 values pass.
func TestLoadRowChecksEveryValue(t *testing.T) {
	const L = 75 // two 32-value vectors and a tail of 11
	for _, path := range cpupath.Supported() {
		t.Run(path.String(), func(t *testing.T) {
			defer cpupath.Force(path)()
			x := make([]float32, 2*L)
			for j := range x {
				x[j] = float32(j%13) - 6
			}
			x[L+4] = math.MaxFloat32 // finite extremes: accepted
			x[L+70] = -math.MaxFloat32
			b := Batch{X: x, Labels: []int{0, 1}}
			r32, r64 := make([]float32, L), make([]float64, L)
			if _, err := loadRow(b, 1, L, 2, r32); err != nil || !slices.Equal(r32, x[L:]) {
				t.Fatalf("float32 row: %v, equal %v", err, slices.Equal(r32, x[L:]))
			}
			if _, err := loadRow(b, 1, L, 2, r64); err != nil {
				t.Fatalf("float64 row: %v", err)
			}
			for j, v := range r64 {
				if v != float64(x[L+j]) {
					t.Fatalf("float64 row value %d: %v, want %v", j, v, x[L+j])
				}
			}
			for _, at := range []int{0, 31, 40, 63, 64, 74} {
				for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
					y := slices.Clone(x)
					y[L+at] = bad
					b := Batch{X: y, Labels: []int{0, 1}}
					want := fmt.Sprintf("example 1 value %d is %v", at, bad)
					if _, err := loadRow(b, 1, L, 2, r32); !errors.Is(err, ErrBatch) || !strings.Contains(err.Error(), want) {
						t.Errorf("float32 row, %v at %d: %v, want %q", bad, at, err, want)
					}
					if _, err := loadRow(b, 1, L, 2, r64); !errors.Is(err, ErrBatch) || !strings.Contains(err.Error(), want) {
						t.Errorf("float64 row, %v at %d: %v, want %q", bad, at, err, want)
					}
				}
			}
		})
	}
}
