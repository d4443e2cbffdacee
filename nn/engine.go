package nn

import (
	"fmt"
	"math"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
)

// A Model runs on one of two engines (Engine): the Gorgonia engine (gorgonia.go), the
// reference, which builds a graph per batch size and reads the taps back from it, and the
// native engine (native.go), which runs layers.Native chunk by chunk under the clipping
// workspace. Both implement network for float32 and float64; this file holds what they
// share: the contract and the loading of a batch.

// network is the engine- and dtype-specific part of a Model.
type network interface {
	params(dst []float64)
	setParams(src []float64)
	// clippedStep runs the training pass on b and adds the clipped sum to dst.
	clippedStep(b Batch, rule clipping.Rule, dst []float64) (loss float64, correct int, st clipping.Stats, err error)
	// sumStep runs the training pass on b and adds the plain gradient sum to dst.
	sumStep(b Batch, dst []float64) (loss float64, correct int, err error)
	// evaluate runs the forward pass on b; predictions reads its logits.
	evaluate(b Batch) (loss float64, correct int, err error)
	perExample(i int, dst []float64) error
	predictions(dst []int)
	// logits copies the logits of the last evaluate into dst (BatchSize × NumClasses).
	logits(dst []float64)
	stepped() bool
}

// checkBatch checks the lengths of b's slices for batch size B and example length L.
func checkBatch(b Batch, B, L int) error {
	switch {
	case len(b.X) != B*L:
		return fmt.Errorf("%w: %d input values, want %d examples × %d", ErrBatch, len(b.X), B, L)
	case b.Labels != nil && len(b.Labels) != B:
		return fmt.Errorf("%w: %d labels for batch size %d", ErrBatch, len(b.Labels), B)
	case b.Mask != nil && len(b.Mask) != B:
		return fmt.Errorf("%w: mask of %d rows for batch size %d", ErrBatch, len(b.Mask), B)
	}
	return nil
}

// loadRow writes example i of b into row (zeros for a padding row) and says whether it is
// real; it checks the values are finite and the label (if any) is one of K classes.
func loadRow[T num.Float](b Batch, i, L, K int, row []T) (bool, error) {
	if b.Mask != nil && !b.Mask[i] {
		clear(row)
		return false, nil
	}
	src := b.X[i*L : (i+1)*L]
	var probe float64
	if r32, ok := any(row).([]float32); ok {
		// A copy, and the vector sum of squares as the check (checkRow).
		copy(r32, src)
		probe = gemm.SumSquares(src) * 0
	} else {
		for j, v := range src {
			row[j] = T(v)
			probe += float64(v) * 0 // NaN or ±Inf make it NaN
		}
	}
	return true, rowError(b, i, K, src, probe)
}

// checkRow checks example i of b, as loadRow does, where it is: for a program that reads
// it in place (layers.Native.ReadInput). Padding rows are not read.
func checkRow(b Batch, i, L, K int) error {
	if b.Mask != nil && !b.Mask[i] {
		return nil
	}
	src := b.X[i*L : (i+1)*L]
	// Every finite float32 squared is below 1.2e77, so a finite sum of squares says every
	// value is finite; NaN and ±Inf make it NaN or +Inf, and probe NaN.
	return rowError(b, i, K, src, gemm.SumSquares(src)*0)
}

// rowError reports the first non-finite value of example i's values src when probe (0
// when they are all finite) says there is one, and a label outside 0…K−1.
func rowError(b Batch, i, K int, src []float32, probe float64) error {
	if probe != 0 {
		for j, v := range src {
			if v != v || math.IsInf(float64(v), 0) {
				return fmt.Errorf("%w: example %d value %d is %v", ErrBatch, i, j, v)
			}
		}
	}
	if b.Labels != nil {
		if lab := b.Labels[i]; lab < 0 || lab >= K {
			return fmt.Errorf("%w: example %d has label %d, want 0…%d", ErrBatch, i, lab, K-1)
		}
	}
	return nil
}

// argmax is the first index of the largest value.
func argmax[T num.Float](v []T) int {
	best := 0
	for j := 1; j < len(v); j++ {
		if v[j] > v[best] {
			best = j
		}
	}
	return best
}
