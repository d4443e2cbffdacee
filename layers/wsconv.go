package layers

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/internal/num"
)

// WSConv2D is a Conv2D whose weight is standardised per output channel before use
// (scaled weight standardisation, as De et al. 2022's WSConv2D for DP training): filter
// f's N = C·kh·kw weights w become
//
//	ŵ = (w − μ) / sqrt(Σ_j (w_j − μ)² + ε),   μ the mean of w, ε = 1e-4,
//
// so every filter has mean 0 and unit L2 norm (N times the unit variance of plain weight
// standardisation), and the convolution computes U·Ŵᵀ + b. De et al. take
// max(N·σ², ε) and add a learned gain per filter; here ε is added (the same when
// N·σ² ≫ ε, and smooth), and the gain is left to the GroupNorm that follows. The stored
// weight is w; its per-example gradient goes through the standardisation (see
// wsConvGradient). The fields are Conv2D's.
type WSConv2D Conv2D

// wsEps is ε of WSConv2D (De et al.'s 1e-4).
const wsEps = 1e-4

// Kind is "wsconv".
func (WSConv2D) Kind() string { return "wsconv" }

// OutputShape is Conv2D's.
func (l WSConv2D) OutputShape(in []int) ([]int, error) {
	out, err := Conv2D(l).OutputShape(in)
	if err != nil {
		return nil, fmt.Errorf("ws%w", err)
	}
	return out, nil
}

// Params are Conv2D's: weight [Filters, C, kh, kw] (before standardisation), then bias.
func (l WSConv2D) Params(in []int) []ParamSpec { return Conv2D(l).Params(in) }

// standardize writes ŵ of each of the f rows of k weights of w into what (both in the
// same column order) and each row's 1/sqrt(Σ(w − μ)² + ε) into rstd.
func standardize[T num.Float](w, what, rstd []T, f, k int) {
	for r := range f {
		row, out := w[r*k:(r+1)*k], what[r*k:(r+1)*k]
		var s float64
		for _, v := range row {
			s += float64(v)
		}
		mean := s / float64(k)
		var ss float64
		for _, v := range row {
			d := float64(v) - mean
			ss += d * d
		}
		inv := 1 / math.Sqrt(ss+wsEps)
		rstd[r] = T(inv)
		for j, v := range row {
			out[j] = T((float64(v) - mean) * inv)
		}
	}
}

// Apply standardises the weight in the graph and adds Gorgonia's Conv2d with it, and
// the bias, as Conv2D does; the tap is Conv2D's (In the im2col node, Z the output) with
// the weight's values for the chain rule through the standardisation. The graph centres
// the [F, N] weight with a product by the centring matrix I − 11ᵀ/N rather than a
// subtraction from a reshaped view of it: Gorgonia may compute an op in place on its
// first operand, and a Reshape of the weight node is a view of the parameters.
func (l WSConv2D) Apply(x *G.Node, params []*G.Node) (*G.Node, *Tap, error) {
	w := params[0]
	if w.Value() == nil {
		return nil, nil, fmt.Errorf("wsconv: the weight node has no value bound (its per-example gradient reads it)")
	}
	ws := w.Shape()
	f, k := ws[0], ws[1]*ws[2]*ws[3]
	filled := func(name string, r, q int, v func(i, j int) float64) *G.Node {
		return constMatrix(x, "wsconv_"+name, r, q, v)
	}
	center := filled("center", k, k, func(i, j int) float64 {
		if i == j {
			return 1 - 1/float64(k)
		}
		return -1 / float64(k)
	})
	colOnes := filled("colones", k, 1, constant(1))
	rowOnes := filled("rowones", 1, k, constant(1))
	eps := filled("eps", f, 1, constant(wsEps))
	var what *G.Node
	err := func() error {
		wr, err := G.Reshape(w, tensor.Shape{f, k})
		if err != nil {
			return err
		}
		c, err := G.Mul(wr, center)
		if err != nil {
			return err
		}
		if what, err = divideBySD(c, colOnes, eps, rowOnes); err != nil {
			return err
		}
		what, err = G.Reshape(what, ws.Clone())
		return err
	}()
	if err != nil {
		return nil, nil, fmt.Errorf("wsconv standardisation: %w", err)
	}
	ps := append([]*G.Node{what}, params[1:]...)
	z, tap, err := Conv2D(l).Apply(x, ps)
	if err != nil {
		return nil, nil, fmt.Errorf("ws%w", err)
	}
	tap.Shape = wsConvShape{conv: tap.Shape.(convGradShape), weight: w.Value()}
	return z, tap, nil
}

func (l WSConv2D) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileWSConv[float32], compileWSConv[float64])
}

func compileWSConv[T num.Float](c *compiler[T], l WSConv2D) error {
	if err := c.image("wsconv"); err != nil {
		return err
	}
	op, out, err := newConvOp(Conv2D(l), c.cur, c.batch, c.params, c.fuse(), c.train, c.nv.first >= 0)
	if err != nil {
		return err
	}
	op.rstd = make([]T, op.f) // prepare standardises
	op.in = c.inputIndex()
	c.add(op, out, c.train)
	return nil
}

func init() {
	registerSettings(func(l WSConv2D) convSettings {
		return convSettings{Filters: l.Filters, Kernel: l.Kernel, Stride: l.Stride, Padding: l.Padding, NoBias: l.NoBias, Init: kernelInitName(l.Init)}
	}, func(s convSettings) (WSConv2D, error) {
		in, err := kernelInit(s.Init)
		return WSConv2D{Filters: s.Filters, Kernel: s.Kernel, Stride: s.Stride, Padding: s.Padding, NoBias: s.NoBias, Init: in}, err
	})
}

var _ TorchDefiner = WSConv2D{}

// TorchModule is WSConv2d(C, Filters, kernel_size, stride, padding, bias), an nn.Conv2d
// that standardises its weight in forward (TorchDefinition); weight and bias are
// Conv2D's.
func (l WSConv2D) TorchModule(in []int) (string, error) {
	m, err := Conv2D(l).TorchModule(in)
	if err != nil {
		return "", err
	}
	return "WS" + m[len("nn."):], nil
}

// TorchDefinition is the WSConv2d class.
func (WSConv2D) TorchDefinition() string {
	return `class WSConv2d(nn.Conv2d):
    """privtrain's layers.WSConv2D: each filter w standardised to (w - mean) / sqrt(sum((w - mean)**2) + 1e-4)."""

    def forward(self, x):
        w = self.weight
        c = w - w.mean(dim=(1, 2, 3), keepdim=True)
        w = c / torch.sqrt((c * c).sum(dim=(1, 2, 3), keepdim=True) + 1e-4)
        return nn.functional.conv2d(x, w, self.bias, self.stride, self.padding)
`
}
