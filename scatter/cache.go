package scatter

import (
	"context"
	"fmt"

	"github.com/privtrain/privtrain/datasets"
)

// Features is a dataset of precomputed scattering features: example i is the transform of
// example i of the source, shape [C·Channels, H/2^J, W/2^J], same label. It implements
// datasets.Dataset and datasets.Labeler, so the trainer consumes it like the images.
//
// Unlike image datasets, its values are not confined to [0, 1]: order 0 is a local mean
// of the pixels (in [0, 1.00003] for pixels in [0, 1]), orders 1 and 2 are local means of
// moduli, small and almost always non-negative.
type Features = datasets.Features

// Cache computes the scattering features (J scales, L angles) of every example of ds, whose
// Shape must be [C, H, W], once, in parallel over GOMAXPROCS goroutines
// (datasets.Transform in chunks, each chunk's transform parallel). The result is
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
	f, err := datasets.Transform(context.Background(), ds, s.OutputShape(C), func(x []float32) ([]float32, error) {
		return s.Transform(x, C)
	})
	if err != nil {
		return nil, fmt.Errorf("scatter: %w", err)
	}
	return f, nil
}
