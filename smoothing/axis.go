package smoothing

import "fmt"

// Axis says which coordinates of one tensor Laplacian smoothing treats as neighbours.
// The smoothing operator A_σ⁻¹ acts on a vector, so a tensor must first be read into
// one, and the reading order decides the neighbours: a dense weight stored [in, out]
// read in storage order has the out values of one input as neighbours, read along axis
// 0 it has the in values of one output unit.
//
//   - [Flat] (the zero Axis): the tensor in its storage order (row-major), smoothed as
//     one periodic vector. This is the behaviour of a Laplacian built without [Axes].
//   - [Along](k): the tensor read with axis k varying fastest and the other axes in
//     storage order outside it, smoothed as one periodic vector of all its values. This
//     is what the DP-LSSGD authors' code does to a PyTorch tensor: it smooths
//     `param.view(-1)`, PyTorch's row-major order, as one vector (an nn.Linear weight is
//     [out, in], so along the inputs of each output, the outputs one after the other).
//     For our dense weights, stored [in, out], that is Along(0); the last axis, Along of
//     a 1-D tensor and Along(k) with only size-1 axes after k are the storage order.
//   - [Lines](k): every line along axis k (the values whose indices differ only in index
//     k) smoothed as its own periodic vector of length Shape[k]; no coupling between
//     lines. It differs from Along(k) only at the ends of the lines, where Along joins
//     one line to the next and the last to the first.
type Axis struct {
	kind axisKind
	dim  int
}

type axisKind uint8

const (
	axisFlat axisKind = iota
	axisAlong
	axisLines
)

// Flat is the storage order: the zero Axis.
func Flat() Axis { return Axis{} }

// Along reads a tensor with axis k varying fastest into one periodic vector.
func Along(k int) Axis { return Axis{kind: axisAlong, dim: k} }

// Lines smooths every line along axis k as its own periodic vector.
func Lines(k int) Axis { return Axis{kind: axisLines, dim: k} }

// String returns "flat", "along axis K" or "lines along axis K".
func (a Axis) String() string {
	switch a.kind {
	case axisAlong:
		return fmt.Sprintf("along axis %d", a.dim)
	case axisLines:
		return fmt.Sprintf("lines along axis %d", a.dim)
	}
	return "flat"
}

// IsFlat says whether a is the storage order.
func (a Axis) IsFlat() bool { return a.kind == axisFlat }

// Axes sets the reading order of each tensor of the layout, one Axis per tensor in
// layout order; without it every tensor is [Flat]. With [WholeVector] the tensors are
// read each in its order and joined into one periodic vector; Lines is refused there.
func Axes(axes ...Axis) Option {
	return func(o *options) { o.axes = append([]Axis(nil), axes...) }
}

// readOrder returns the storage index of each position of the vector that tensor t,
// read with axis a, is smoothed as (nil: the storage order itself), and the length of
// the periodic pieces that vector is cut into (the tensor size, or Shape[k] for Lines).
func readOrder(t Tensor, n int, a Axis) (perm []int, piece int, err error) {
	if a.kind == axisFlat {
		return nil, n, nil
	}
	k := a.dim
	if k < 0 || k >= len(t.Shape) {
		return nil, 0, fmt.Errorf("%w: tensor %q of shape %v smoothed %v: no such axis",
			ErrInvalid, t.Name, t.Shape, a)
	}
	piece = n
	if a.kind == axisLines {
		piece = t.Shape[k]
	}
	// Row-major strides; the axes other than k in storage order, k innermost.
	inner := 1 // stride of axis k: the product of the sizes after it
	for _, s := range t.Shape[k+1:] {
		inner *= s
	}
	size := t.Shape[k]
	outerAfter := inner               // the axes after k form the fast part of the outer index
	outerBefore := n / (size * inner) // the axes before k its slow part
	perm = make([]int, 0, n)
	identity := true
	for hi := 0; hi < outerBefore; hi++ {
		for lo := 0; lo < outerAfter; lo++ {
			base := hi*size*inner + lo
			for j := 0; j < size; j++ {
				idx := base + j*inner
				identity = identity && idx == len(perm)
				perm = append(perm, idx)
			}
		}
	}
	if identity {
		perm = nil
	}
	return perm, piece, nil
}
