package data

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Dataset is a design matrix with one example per row and a label per
// example. The solvers of package erm read it and never modify it.
type Dataset struct {
	// X is n×d, one example per row.
	X *mat.Dense
	// Y has one label per row of X: ±1 for classification, any real number
	// for regression.
	Y []float64

	// L2Bound and L1Bound bound ‖x_i‖₂ and ‖x_i‖₁ for every row x_i of ANY
	// data set the caller could have passed, not just this one: privacy
	// sensitivities are computed from them, so they must not be read off the
	// data. Zero means unknown, and private solvers refuse to run. Normalize
	// and Synthetic set them; set them yourself only for data whose domain
	// you know.
	L2Bound, L1Bound float64
}

// Len returns the number of examples.
func (ds *Dataset) Len() int {
	if ds == nil || ds.X == nil {
		return 0
	}
	r, _ := ds.X.Dims()
	return r
}

// Dim returns the number of features.
func (ds *Dataset) Dim() int {
	if ds == nil || ds.X == nil {
		return 0
	}
	_, c := ds.X.Dims()
	return c
}

// Row returns example i as a slice aliasing X's storage. Callers must not
// modify it.
func (ds *Dataset) Row(i int) []float64 { return ds.X.RawRowView(i) }

// Validate checks that X and Y agree in length, that every entry is finite,
// and that every row satisfies the declared norm bounds (with a relative slack
// of 1e-9 for rounding).
func (ds *Dataset) Validate() error {
	if ds == nil || ds.X == nil {
		return fmt.Errorf("data: no design matrix: %w", ErrInvalid)
	}
	n, d := ds.X.Dims()
	if n == 0 || d == 0 {
		return fmt.Errorf("data: empty design matrix (%d×%d): %w", n, d, ErrInvalid)
	}
	if len(ds.Y) != n {
		return fmt.Errorf("data: %d labels for %d examples: %w", len(ds.Y), n, ErrInvalid)
	}
	if ds.L2Bound < 0 || ds.L1Bound < 0 || math.IsNaN(ds.L2Bound) || math.IsNaN(ds.L1Bound) {
		return fmt.Errorf("data: negative or NaN norm bound (L2 %v, L1 %v): %w", ds.L2Bound, ds.L1Bound, ErrInvalid)
	}
	for i := range n {
		if y := ds.Y[i]; math.IsNaN(y) || math.IsInf(y, 0) {
			return fmt.Errorf("data: example %d: label %v is not finite: %w", i, y, ErrInvalid)
		}
		row := ds.X.RawRowView(i)
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("data: example %d feature %d: %v is not finite: %w", i, j, v, ErrInvalid)
			}
		}
		if b := ds.L2Bound; b > 0 {
			if nrm := floats.Norm(row, 2); nrm > b*(1+1e-9) {
				return fmt.Errorf("data: example %d has L2 norm %g above the declared bound %g: %w", i, nrm, b, ErrInvalid)
			}
		}
		if b := ds.L1Bound; b > 0 {
			if nrm := floats.Norm(row, 1); nrm > b*(1+1e-9) {
				return fmt.Errorf("data: example %d has L1 norm %g above the declared bound %g: %w", i, nrm, b, ErrInvalid)
			}
		}
	}
	return nil
}

// Normalize applies the papers' preprocessing in place: every feature is
// divided by its largest absolute value (all-zero features are left alone),
// then every example is scaled to unit L2 norm (all-zero examples are left
// alone). It records L2Bound = 1 and L1Bound = √d, bounds that hold for any
// data set normalized this way.
//
// The per-feature maxima depend on the whole data set, so this step is not
// differentially private; the DP-SCD and DP-SVRG papers preprocess this way
// and report ε for the training run alone.
func (ds *Dataset) Normalize() { ds.normalizeBy(ds.maxAbs()) }

// maxAbs is each feature's largest absolute value over the examples.
func (ds *Dataset) maxAbs() []float64 {
	n, d := ds.X.Dims()
	maxAbs := make([]float64, d)
	for i := range n {
		for j, v := range ds.X.RawRowView(i) {
			maxAbs[j] = max(maxAbs[j], math.Abs(v))
		}
	}
	return maxAbs
}

// normalizeBy is Normalize with the per-feature maxima given (e.g. a training
// file's, applied to its test file too).
func (ds *Dataset) normalizeBy(maxAbs []float64) {
	n, d := ds.X.Dims()
	for i := range n {
		row := ds.X.RawRowView(i)
		for j := range row {
			if maxAbs[j] > 0 {
				row[j] /= maxAbs[j]
			}
		}
		if nrm := floats.Norm(row, 2); nrm > 0 {
			floats.Scale(1/nrm, row)
		}
	}
	ds.L2Bound = 1
	ds.L1Bound = math.Sqrt(float64(d))
}

// BinaryLabels maps labels with exactly two distinct values to -1 (the
// smaller) and +1 (the larger), so {0,1}, {1,2} and {-1,+1} all become ±1.
// It fails if the labels take one value or more than two.
func (ds *Dataset) BinaryLabels() error {
	var vals []float64
	for _, y := range ds.Y {
		if !slices.Contains(vals, y) {
			vals = append(vals, y)
			if len(vals) > 2 {
				return fmt.Errorf("data: labels take more than two values (%v, %v, %v, …); not a binary task: %w", vals[0], vals[1], vals[2], ErrInvalid)
			}
		}
	}
	if len(vals) < 2 {
		return fmt.Errorf("data: all labels equal %v; a binary task needs two classes: %w", vals, ErrInvalid)
	}
	lo := min(vals[0], vals[1])
	for i, y := range ds.Y {
		if y == lo {
			ds.Y[i] = -1
		} else {
			ds.Y[i] = 1
		}
	}
	return nil
}

// CenterLabels subtracts the mean label from every label (the DP-SCD paper
// centres the YearPredictionMSD years) and returns the mean it removed.
func (ds *Dataset) CenterLabels() float64 {
	if len(ds.Y) == 0 {
		return 0
	}
	mean := floats.Sum(ds.Y) / float64(len(ds.Y))
	for i := range ds.Y {
		ds.Y[i] -= mean
	}
	return mean
}

// Subset returns the examples at the given indices, copied, with the same
// norm bounds.
func (ds *Dataset) Subset(idx []int) *Dataset {
	d := ds.Dim()
	x := mat.NewDense(max(len(idx), 1), d, nil)
	y := make([]float64, len(idx))
	for k, i := range idx {
		copy(x.RawRowView(k), ds.X.RawRowView(i))
		y[k] = ds.Y[i]
	}
	if len(idx) == 0 {
		x = nil
	}
	return &Dataset{X: x, Y: y, L2Bound: ds.L2Bound, L1Bound: ds.L1Bound}
}

// NormalizeFeatures scales every feature (column) to unit L2 norm over the
// examples, the assumption of the DP-SCD paper's primal variant (Lemma 4:
// "rows of X normalized" in its d×N layout). Every entry then lies in
// [−1, 1], so it records L2Bound = √d and L1Bound = d. Like Normalize it
// looks at the whole data set and is not private.
func (ds *Dataset) NormalizeFeatures() {
	n, d := ds.X.Dims()
	norms := make([]float64, d)
	for i := range n {
		for j, v := range ds.X.RawRowView(i) {
			norms[j] += v * v
		}
	}
	for j := range norms {
		norms[j] = math.Sqrt(norms[j])
	}
	for i := range n {
		row := ds.X.RawRowView(i)
		for j := range row {
			if norms[j] > 0 {
				row[j] /= norms[j]
			}
		}
	}
	ds.L2Bound = math.Sqrt(float64(d))
	ds.L1Bound = float64(d)
}
