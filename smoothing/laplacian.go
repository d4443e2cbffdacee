package smoothing

import (
	"fmt"
	"math"

	"github.com/privtrain/privtrain/internal/num"
)

// Tensor names one parameter tensor of a model and its shape. A layout ([]Tensor) lists
// a model's tensors in the order of its flat parameter vector, each flattened row-major.
type Tensor struct {
	Name  string
	Shape []int
}

// Size returns the number of elements of t, or an error if a dimension is not positive
// or the product overflows.
func (t Tensor) Size() (int, error) {
	n := 1
	for _, s := range t.Shape {
		if s < 1 {
			return 0, fmt.Errorf("%w: tensor %q has shape %v, want positive dimensions",
				ErrInvalid, t.Name, t.Shape)
		}
		if n > math.MaxInt/s {
			return 0, fmt.Errorf("%w: tensor %q of shape %v is too large", ErrInvalid, t.Name, t.Shape)
		}
		n *= s
	}
	return n, nil
}

// Option configures [NewLaplacian].
type Option func(*options)

type options struct {
	wholeVector bool
}

// WholeVector makes the Laplacian smooth the concatenation of all tensors as one periodic
// vector, as in the paper's analysis, instead of each tensor separately (the default, as in
// the authors' code).
func WholeVector() Option {
	return func(o *options) { o.wholeVector = true }
}

// Laplacian applies A_σ⁻¹ to a model's flat parameter-shaped vector: by default to each
// tensor of the layout separately, or to the whole vector with [WholeVector]. One [Solver]
// is built per distinct tensor length.
//
// A Laplacian keeps work buffers and is not safe for concurrent use.
type Laplacian[T num.Float] struct {
	sigma  float64
	d      int
	blocks []block[T]
}

type block[T num.Float] struct {
	offset int
	solver *Solver[T]
}

// NewLaplacian returns the smoothing operator with constant σ ≥ 0 for vectors laid out as
// layout (tensors in flat order, row-major). The layout must hold at least one tensor and
// every dimension must be positive; a tensor with an empty shape is a scalar.
func NewLaplacian[T num.Float](sigma float64, layout []Tensor, opts ...Option) (*Laplacian[T], error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkSigma(sigma); err != nil {
		return nil, err
	}
	if len(layout) == 0 {
		return nil, fmt.Errorf("%w: empty layout", ErrInvalid)
	}
	sizes := make([]int, len(layout))
	total := 0
	for i, t := range layout {
		n, err := t.Size()
		if err != nil {
			return nil, err
		}
		if total > math.MaxInt-n {
			return nil, fmt.Errorf("%w: layout too large", ErrInvalid)
		}
		sizes[i] = n
		total += n
	}
	if o.wholeVector {
		sizes = []int{total}
	}
	l := &Laplacian[T]{sigma: sigma, d: total}
	solvers := make(map[int]*Solver[T])
	offset := 0
	for _, n := range sizes {
		s, ok := solvers[n]
		if !ok {
			var err error
			if s, err = NewSolver[T](n, sigma); err != nil {
				return nil, err
			}
			solvers[n] = s
		}
		l.blocks = append(l.blocks, block[T]{offset: offset, solver: s})
		offset += n
	}
	return l, nil
}

// Len returns the length of the vectors l smooths (the sum of the tensor sizes).
func (l *Laplacian[T]) Len() int { return l.d }

// Sigma returns the smoothing constant σ.
func (l *Laplacian[T]) Sigma() float64 { return l.sigma }

// Smooth replaces v by A_σ⁻¹v, tensor by tensor (or as a whole with [WholeVector]).
// len(v) must be [Laplacian.Len]. It does not allocate.
func (l *Laplacian[T]) Smooth(v []T) error {
	if len(v) != l.d {
		return fmt.Errorf("%w: Laplacian for %d parameters got a vector of length %d",
			ErrLength, l.d, len(v))
	}
	if l.sigma == 0 {
		return nil
	}
	for _, b := range l.blocks {
		part := v[b.offset : b.offset+b.solver.d]
		b.solver.solve(part, part)
	}
	return nil
}
