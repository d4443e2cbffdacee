package clipping

import "fmt"

// Float is the element type of a network's taps: its dtype.
type Float interface{ float32 | float64 }

// Kind says how a layer's per-example gradient is formed from its tap.
type Kind int

const (
	// Dense is a fully connected layer Z = A·W + b with W of shape [In, Out].
	// Example i's gradient is outer(A_i, dZ_i) for W (row-major [In × Out]) and dZ_i for b.
	Dense Kind = iota
	// Conv is a convolution computed as Z_i = W·U_iᵀ + b, with W of shape [Out, In]
	// (In = channels·kh·kw) and U_i the example's im2col'd input, one row of In values per
	// output position. Example i's gradient is dZ_i·U_i for W (row-major [Out × In]) and
	// Σ_p dZ_i[:, p] for b.
	Conv
)

func (k Kind) String() string {
	switch k {
	case Dense:
		return "dense"
	case Conv:
		return "conv"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Tap is what one parametrised layer hands over after the backward pass of the summed loss:
// its input and the gradient of the loss at its pre-activation output. Per-example
// gradients are linear in GradZ, so these two arrays determine every example's gradient
// with respect to the layer's parameters.
//
// The layer's parameters occupy NumParams consecutive entries of the flat parameter vector:
// the weight first, then (if Bias) the bias.
type Tap[T Float] struct {
	Kind Kind
	// In is the layer input, example-major. Dense: A, [B × InDim]. Conv: U, the im2col'd
	// input, [B × Positions × InDim].
	In []T
	// GradZ is ∂loss/∂Z, example-major. Dense: [B × OutDim]. Conv: [B × OutDim × Positions]
	// (channels first, as Z is NCHW).
	GradZ []T
	// InDim is the number of inputs per output unit (dense: input width; conv:
	// channels·kh·kw); OutDim the number of output units (dense: width; conv: filters).
	InDim, OutDim int
	// Positions is the number of output positions of a convolution (OH·OW); ignored for Dense.
	Positions int
	// Bias says whether the layer has a bias of OutDim entries after its weight.
	Bias bool
	// PositionsMajor says a Conv tap's GradZ is [B × Positions × OutDim] (positions first,
	// as an NHWC activation) instead of [B × OutDim × Positions].
	PositionsMajor bool
	// InOrder, when not nil, says which weight the columns of In feed: column j of In (the
	// j-th of InDim values per example or position) is multiplied by weight column
	// InOrder[j] of the flat layout (Conv: weight [OutDim × InDim], Dense: weight row
	// InOrder[j] of [InDim × OutDim]). It must be a permutation of 0…InDim−1; nil means the
	// identity. A network whose im2col orders a patch differently from its weights (NHWC
	// patches, (kh, kw, channel)) uses it instead of permuting the patches.
	InOrder []int
	// Patches, when not nil, stands in for a Conv tap's In: it returns example i's
	// im2col'd input, [Positions × InDim] in In's order, either from a cache of its own or
	// built into buf (which has room for it). A network that can rebuild the patches from
	// its (much smaller) input activation uses it instead of keeping In for the whole
	// batch, which is then nil. worker is the Filler's worker whose fill the call follows
	// (the patches may still be in that worker's cache), or −1. It is called concurrently
	// for different workers.
	Patches func(worker, i int, buf []T) []T
}

// NumParams is the number of parameters the tap covers: InDim·OutDim, plus OutDim with a bias.
func (t Tap[T]) NumParams() int {
	n := t.InDim * t.OutDim
	if t.Bias {
		n += t.OutDim
	}
	return n
}

func (t Tap[T]) positions() int {
	if t.Kind == Dense {
		return 1
	}
	return t.Positions
}

// check reports whether the tap's arrays fit a batch of the given size.
func (t Tap[T]) check(batch int) error {
	if t.Kind != Dense && t.Kind != Conv {
		return fmt.Errorf("%w: unknown tap kind %v", ErrShape, t.Kind)
	}
	if t.InDim <= 0 || t.OutDim <= 0 || t.positions() <= 0 {
		return fmt.Errorf("%w: %v tap with InDim %d, OutDim %d, Positions %d", ErrShape, t.Kind, t.InDim, t.OutDim, t.Positions)
	}
	p := t.positions()
	if t.Patches != nil && t.Kind != Conv {
		return fmt.Errorf("%w: %v tap with Patches", ErrShape, t.Kind)
	}
	if want := batch * p * t.InDim; len(t.In) != want && (t.Patches == nil || t.In != nil) {
		return fmt.Errorf("%w: %v tap input has %d values, want %d×%d×%d = %d", ErrShape, t.Kind, len(t.In), batch, p, t.InDim, want)
	}
	if want := batch * t.OutDim * p; len(t.GradZ) != want {
		return fmt.Errorf("%w: %v tap gradient has %d values, want %d×%d×%d = %d", ErrShape, t.Kind, len(t.GradZ), batch, t.OutDim, p, want)
	}
	if t.InOrder != nil {
		if len(t.InOrder) != t.InDim {
			return fmt.Errorf("%w: %v tap input order has %d entries for %d inputs", ErrShape, t.Kind, len(t.InOrder), t.InDim)
		}
		seen := make([]bool, t.InDim)
		for _, j := range t.InOrder {
			if j < 0 || j >= t.InDim || seen[j] {
				return fmt.Errorf("%w: %v tap input order is not a permutation of 0…%d", ErrShape, t.Kind, t.InDim-1)
			}
			seen[j] = true
		}
	}
	return nil
}
