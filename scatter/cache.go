package scatter

import (
	"fmt"

	"github.com/privtrain/privtrain/datasets"
)

// cacheChunk is how many examples Cache reads and transforms at a time: enough to keep
// every worker busy, few enough that the raw images of a chunk stay small.
const cacheChunk = 512

// Features is a dataset of precomputed scattering features: example i is the transform of
// example i of the source, shape [C·Channels, H/2^J, W/2^J], same label. It implements
// datasets.Dataset and datasets.Labeler, so the trainer consumes it like the images.
//
// Unlike image datasets, its values are not confined to [0, 1]: order 0 is a local mean
// of the pixels (in [0, 1.00003] for pixels in [0, 1]), orders 1 and 2 are local means of
// moduli, small and almost always non-negative.
type Features struct {
	shape      []int
	size       int
	numClasses int
	labels     []int32
	values     []float32
}

// Cache computes the scattering features (J scales, L angles) of every example of ds, whose
// Shape must be [C, H, W], once, in parallel over GOMAXPROCS goroutines. The result is
// deterministic. It holds Len·C·Channels(J, L)·(H/2^J)·(W/2^J) float32 values: about 0.95
// GB for Fashion-MNIST's 60,000 training images with J = 2, L = 8, 3.1 GB for CIFAR-10's
// 50,000.
func Cache(ds datasets.Dataset, J, L int) (*Features, error) {
	shape := ds.Shape()
	if len(shape) != 3 {
		return nil, fmt.Errorf("scatter: dataset examples have shape %v, want [C H W]", shape)
	}
	C, H, W := shape[0], shape[1], shape[2]
	if C < 1 {
		return nil, fmt.Errorf("scatter: dataset examples have %d channels", C)
	}
	s, err := New(J, L, H, W)
	if err != nil {
		return nil, err
	}
	out := s.OutputShape(C)
	f := &Features{shape: out, size: out[0] * out[1] * out[2], numClasses: ds.NumClasses()}
	n := ds.Len()
	f.labels = make([]int32, n)
	f.values = make([]float32, n*f.size)
	in := C * H * W
	buf := make([]float32, min(n, cacheChunk)*in)
	for start := 0; start < n; start += cacheChunk {
		end := min(n, start+cacheChunk)
		for i := start; i < end; i++ {
			f.labels[i] = int32(ds.Example(i, buf[(i-start)*in:(i-start+1)*in]))
		}
		feats, err := s.Transform(buf[:(end-start)*in], C)
		if err != nil {
			return nil, fmt.Errorf("scatter: examples %d…%d: %w", start, end-1, err)
		}
		copy(f.values[start*f.size:], feats)
	}
	return f, nil
}

// Len returns the number of examples.
func (f *Features) Len() int { return len(f.labels) }

// Shape returns a copy of the per-example shape [C·Channels, H/2^J, W/2^J].
func (f *Features) Shape() []int { return append([]int(nil), f.shape...) }

// NumClasses is the source dataset's.
func (f *Features) NumClasses() int { return f.numClasses }

// Label returns the label of example i.
func (f *Features) Label(i int) int { return int(f.labels[i]) }

// Example copies the features of example i into dst and returns its label; see
// datasets.Dataset.
func (f *Features) Example(i int, dst []float32) int {
	if len(dst) != f.size {
		panic(fmt.Sprintf("scatter: Example buffer has %d values, want %d", len(dst), f.size))
	}
	copy(dst, f.values[i*f.size:(i+1)*f.size])
	return int(f.labels[i])
}

var (
	_ datasets.Dataset = (*Features)(nil)
	_ datasets.Labeler = (*Features)(nil)
)
