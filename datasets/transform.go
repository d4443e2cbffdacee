package datasets

import (
	"context"
	"fmt"
	"slices"
)

// transformChunk is how many examples Transform reads and transforms at a time: enough
// for a parallel transform to keep every worker busy, few enough that a chunk's raw
// examples stay small.
const transformChunk = 512

// Features is an in-memory dataset of values derived from another dataset's examples
// (Transform): example i is the transform of the source's example i, with its label.
// Unlike image datasets, its values are not confined to [0, 1].
type Features struct {
	shape   []int
	size    int
	classes int
	labels  []int32
	values  []float32
}

var (
	_ Dataset = (*Features)(nil)
	_ Labeler = (*Features)(nil)
)

// Transform applies f to every example of ds once and keeps the results in memory, as a
// Features dataset of per-example shape out. f receives a chunk of consecutive examples
// (at most 512, example-major, each in ds's layout) and returns their transforms, Prod(out)
// values per example in the same order; it may run in parallel inside. Transform stops
// between chunks when ctx is done, and names the examples of a chunk f fails on.
func Transform(ctx context.Context, ds Dataset, out []int, f func(x []float32) ([]float32, error)) (*Features, error) {
	size := 1
	for _, d := range out {
		if d <= 0 {
			return nil, fmt.Errorf("datasets: transformed shape %v", out)
		}
		size *= d
	}
	n, in := ds.Len(), Size(ds)
	fs := &Features{shape: slices.Clone(out), size: size, classes: ds.NumClasses(),
		labels: make([]int32, n), values: make([]float32, n*size)}
	buf := make([]float32, min(n, transformChunk)*in)
	for lo := 0; lo < n; lo += transformChunk {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("datasets: transform stopped after %d of %d examples: %w", lo, n, err)
		}
		hi := min(n, lo+transformChunk)
		for i := lo; i < hi; i++ {
			fs.labels[i] = int32(ds.Example(i, buf[(i-lo)*in:(i-lo+1)*in]))
		}
		x, err := f(buf[:(hi-lo)*in])
		if err != nil {
			return nil, fmt.Errorf("examples %d…%d: %w", lo, hi-1, err)
		}
		if len(x) != (hi-lo)*size {
			return nil, fmt.Errorf("datasets: transform of examples %d…%d gave %d values, want %d×%d", lo, hi-1, len(x), hi-lo, size)
		}
		copy(fs.values[lo*size:hi*size], x)
		if p, ok := ctx.Value(progressKey{}).(func(done, total int)); ok {
			p(hi, n)
		}
	}
	return fs, nil
}

type progressKey struct{}

// WithProgress returns ctx carrying f, which Transform calls after each chunk of
// examples with how many of the total it has transformed: for a progress display of a
// long one-time computation (a front end's features).
func WithProgress(ctx context.Context, f func(done, total int)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// Len returns the number of examples.
func (f *Features) Len() int { return len(f.labels) }

// Shape returns a copy of the per-example shape.
func (f *Features) Shape() []int { return slices.Clone(f.shape) }

// NumClasses is the source dataset's.
func (f *Features) NumClasses() int { return f.classes }

// Label returns the label of example i.
func (f *Features) Label(i int) int { return int(f.labels[i]) }

// Example copies the values of example i into dst and returns its label; see Dataset.
func (f *Features) Example(i int, dst []float32) int {
	if len(dst) != f.size {
		panic(fmt.Sprintf("datasets: Example buffer has %d values, want %d", len(dst), f.size))
	}
	copy(dst, f.values[i*f.size:(i+1)*f.size])
	return int(f.labels[i])
}

// NewFeatures is the Features dataset of per-example shape out whose example i has the
// values values[i·Prod(out) : (i+1)·Prod(out)] and ds's label i: a transform of ds
// computed earlier (a cache of Transform's output). It keeps values, which the caller
// must not modify afterwards.
func NewFeatures(ds Dataset, out []int, values []float32) (*Features, error) {
	size := 1
	for _, d := range out {
		if d <= 0 {
			return nil, fmt.Errorf("datasets: features of shape %v", out)
		}
		size *= d
	}
	n := ds.Len()
	if len(values) != n*size {
		return nil, fmt.Errorf("datasets: %d feature values for %d examples of shape %v, want %d", len(values), n, out, n*size)
	}
	fs := &Features{shape: slices.Clone(out), size: size, classes: ds.NumClasses(), labels: make([]int32, n), values: values}
	for i, l := range Labels(ds) {
		fs.labels[i] = int32(l)
	}
	return fs, nil
}
