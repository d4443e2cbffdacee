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
	axes        []Axis
}

// WholeVector makes the Laplacian smooth the concatenation of all tensors as one periodic
// vector, as in the paper's analysis, instead of each tensor separately (the default, as in
// the authors' code).
func WholeVector() Option {
	return func(o *options) { o.wholeVector = true }
}

// Laplacian applies A_σ⁻¹ to a model's flat parameter-shaped vector: by default to each
// tensor of the layout separately, or to the whole vector with [WholeVector]; each tensor
// read in storage order or along the axis [Axes] gives it. One [Solver] is built per
// distinct length of the periodic vectors smoothed.
//
// A Laplacian keeps work buffers and is not safe for concurrent use.
type Laplacian[T num.Float] struct {
	sigma    float64
	d        int
	segments []segment[T]
	buf      []T // the values of a segment read in its order
}

// segment is a stretch v[offset : offset+n] of the vector (a tensor, or all of it with
// WholeVector), read in the order perm (nil: storage order) and cut into periodic
// pieces of solver.d values each.
type segment[T num.Float] struct {
	offset, n int
	perm      []int
	solver    *Solver[T]
}

// NewLaplacian returns the smoothing operator with constant σ ≥ 0 for vectors laid out as
// layout (tensors in flat order, row-major). The layout must hold at least one tensor and
// every dimension must be positive; a tensor with an empty shape is a scalar. [Axes]
// chooses, per tensor, the order it is read in (default [Flat], the storage order).
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
	if o.axes != nil && len(o.axes) != len(layout) {
		return nil, fmt.Errorf("%w: %d axes for a layout of %d tensors", ErrInvalid, len(o.axes), len(layout))
	}
	l := &Laplacian[T]{sigma: sigma}
	solvers := make(map[int]*Solver[T])
	solverFor := func(n int) (*Solver[T], error) {
		s, ok := solvers[n]
		if !ok {
			var err error
			if s, err = NewSolver[T](n, sigma); err != nil {
				return nil, err
			}
			solvers[n] = s
		}
		return s, nil
	}
	var whole []int // WholeVector's reading order, when some tensor is not in storage order
	for i, t := range layout {
		n, err := t.Size()
		if err != nil {
			return nil, err
		}
		if l.d > math.MaxInt-n {
			return nil, fmt.Errorf("%w: layout too large", ErrInvalid)
		}
		var a Axis
		if o.axes != nil {
			a = o.axes[i]
		}
		perm, piece, err := readOrder(t, n, a)
		if err != nil {
			return nil, err
		}
		if o.wholeVector {
			if a.kind == axisLines {
				return nil, fmt.Errorf("%w: tensor %q smoothed %v cannot be part of a whole-vector smoothing",
					ErrInvalid, t.Name, a)
			}
			if perm != nil && whole == nil {
				whole = make([]int, l.d, l.d+n)
				for j := range whole {
					whole[j] = j
				}
			}
			if whole != nil {
				for j := 0; j < n; j++ {
					if perm != nil {
						whole = append(whole, l.d+perm[j])
					} else {
						whole = append(whole, l.d+j)
					}
				}
			}
		} else {
			s, err := solverFor(piece)
			if err != nil {
				return nil, err
			}
			l.segments = append(l.segments, segment[T]{offset: l.d, n: n, perm: perm, solver: s})
			if perm != nil && n > len(l.buf) {
				l.buf = make([]T, n)
			}
		}
		l.d += n
	}
	if o.wholeVector {
		s, err := solverFor(l.d)
		if err != nil {
			return nil, err
		}
		l.segments = []segment[T]{{offset: 0, n: l.d, perm: whole, solver: s}}
		if whole != nil {
			l.buf = make([]T, l.d)
		}
	}
	return l, nil
}

// Len returns the length of the vectors l smooths (the sum of the tensor sizes).
func (l *Laplacian[T]) Len() int { return l.d }

// Sigma returns the smoothing constant σ.
func (l *Laplacian[T]) Sigma() float64 { return l.sigma }

// Smooth replaces v by A_σ⁻¹v, tensor by tensor (or as a whole with [WholeVector]), each
// tensor read in the order of its [Axis]. len(v) must be [Laplacian.Len]. It does not
// allocate.
func (l *Laplacian[T]) Smooth(v []T) error {
	if len(v) != l.d {
		return fmt.Errorf("%w: Laplacian for %d parameters got a vector of length %d",
			ErrLength, l.d, len(v))
	}
	if l.sigma == 0 {
		return nil
	}
	for _, sg := range l.segments {
		part := v[sg.offset : sg.offset+sg.n]
		if sg.perm == nil {
			sg.smoothPieces(part)
			continue
		}
		buf := l.buf[:sg.n]
		for p, idx := range sg.perm {
			buf[p] = part[idx]
		}
		sg.smoothPieces(buf)
		for p, idx := range sg.perm {
			part[idx] = buf[p]
		}
	}
	return nil
}

// smoothPieces smooths x, a segment read in its order, piece by piece in place.
func (sg segment[T]) smoothPieces(x []T) {
	m := sg.solver.d
	for off := 0; off < len(x); off += m {
		piece := x[off : off+m]
		sg.solver.solve(piece, piece)
	}
}
