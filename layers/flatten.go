package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/internal/num"
)

// Flatten reshapes each example to a vector, in row-major (CHW) order, the order the
// weights of a following Dense layer are indexed by.
type Flatten struct{}

// Kind is "flatten".
func (Flatten) Kind() string { return "flatten" }

// OutputShape is [prod(in)].
func (Flatten) OutputShape(in []int) ([]int, error) {
	if len(in) == 0 || num.Prod(in) <= 0 {
		return nil, fmt.Errorf("flatten: input shape %v", in)
	}
	return []int{num.Prod(in)}, nil
}

// Params is nil.
func (Flatten) Params([]int) []ParamSpec { return nil }

// Apply reshapes [B, in...] to [B, prod(in)].
func (Flatten) Apply(x *G.Node, _ []*G.Node) (*G.Node, *Tap, error) {
	s := x.Shape()
	if len(s) == 2 {
		return x, nil, nil
	}
	y, err := G.Reshape(x, tensor.Shape{s[0], num.Prod(s[1:])})
	if err != nil {
		return nil, nil, fmt.Errorf("flatten: %w", err)
	}
	return y, nil, nil
}

func (l Flatten) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileFlatten[float32], compileFlatten[float64])
}

func compileFlatten[T num.Float](c *compiler[T], _ Flatten) error {
	cur := c.cur
	out := activation{n: cur.n}
	_, reorders := c.next().(reordered)
	switch {
	case !cur.image || !cur.nhwc || cur.toNHWCFree():
		c.add(aliasOp[T]{}, out, false)
	case reorders:
		// Leave the NHWC order; the next layer permutes its weight rows instead
		// (flat input j' = p·C + c is weight row c·HW + p).
		hw := cur.h * cur.w
		order := make([]int, cur.n)
		for p := range hw {
			for ch := range cur.c {
				order[p*cur.c+ch] = ch*hw + p
			}
		}
		c.add(aliasOp[T]{}, out, false)
		c.pendingOrder = order
	default:
		c.add(&transposeOp[T]{h: cur.h, w: cur.w, c: cur.c}, out, false)
	}
	return nil
}

// transposeOp converts images between CHW and NHWC (toNHWC), or NHWC to CHW order for
// Flatten.
type transposeOp[T num.Float] struct {
	h, w, c int
	toNHWC  bool
}

func (o *transposeOp[T]) alias() bool             { return false }
func (o *transposeOp[T]) prepare()                {}
func (o *transposeOp[T]) scratchSize() (int, int) { return 0, 0 }

// move copies n images from src to dst, CHW to NHWC with toNHWC, else NHWC to CHW.
func (o *transposeOp[T]) move(dst, src []T, n int, toNHWC bool) {
	hw, c := o.h*o.w, o.c
	size := hw * c
	for e := range n {
		d, s := dst[e*size:(e+1)*size], src[e*size:(e+1)*size]
		for p := range hw {
			for ch := range c {
				if toNHWC {
					d[p*c+ch] = s[ch*hw+p]
				} else {
					d[ch*hw+p] = s[p*c+ch]
				}
			}
		}
	}
}

func (o *transposeOp[T]) forward(_ *nativeScratch[T], _ int, in, out []T, n, _ int) {
	o.move(out, in, n, o.toNHWC)
}

func (o *transposeOp[T]) backward(_ *nativeScratch[T], _ int, _, _, gOut, gIn []T, n, _ int) {
	if gIn != nil {
		o.move(gIn, gOut, n, !o.toNHWC)
	}
}

// aliasOp is a Flatten whose output is its input (a flat vector, or one channel, or one
// pixel, where NHWC and CHW orders agree).
type aliasOp[T num.Float] struct{}

func (aliasOp[T]) alias() bool             { return true }
func (aliasOp[T]) prepare()                {}
func (aliasOp[T]) scratchSize() (int, int) { return 0, 0 }
func (aliasOp[T]) forward(*nativeScratch[T], int, []T, []T, int, int) {
	panic("layers: alias op run")
}
func (aliasOp[T]) backward(*nativeScratch[T], int, []T, []T, []T, []T, int, int) {
	panic("layers: alias op run")
}

func init() { registerPlain[Flatten]() }

var _ TorchExporter = Flatten{}

// TorchModule is nn.Flatten(): ours is row-major CHW, PyTorch's order.
func (Flatten) TorchModule([]int) (string, error) { return "nn.Flatten()", nil }
