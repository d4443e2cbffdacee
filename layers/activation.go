package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
)

// ReLU is max(x, 0), elementwise.
type ReLU struct{}

// Kind is "relu".
func (ReLU) Kind() string { return "relu" }

// OutputShape is in.
func (ReLU) OutputShape(in []int) ([]int, error) { return in, nil }

// Params is nil.
func (ReLU) Params([]int) []ParamSpec { return nil }

// Apply adds Gorgonia's Rectify.
func (ReLU) Apply(x *G.Node, _ []*G.Node) (*G.Node, *Tap, error) {
	y, err := G.Rectify(x)
	if err != nil {
		return nil, nil, fmt.Errorf("relu: %w", err)
	}
	return y, nil, nil
}

// Tanh is the hyperbolic tangent, elementwise: a bounded ("tempered") activation that
// keeps gradient norms small, which helps under clipping (Papernot et al. 2021).
type Tanh struct{}

// Kind is "tanh".
func (Tanh) Kind() string { return "tanh" }

// OutputShape is in.
func (Tanh) OutputShape(in []int) ([]int, error) { return in, nil }

// Params is nil.
func (Tanh) Params([]int) []ParamSpec { return nil }

// Apply adds Gorgonia's Tanh.
func (Tanh) Apply(x *G.Node, _ []*G.Node) (*G.Node, *Tap, error) {
	y, err := G.Tanh(x)
	if err != nil {
		return nil, nil, fmt.Errorf("tanh: %w", err)
	}
	return y, nil, nil
}

func (l ReLU) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileActivation[float32, ReLU], compileActivation[float64, ReLU])
}

func (l Tanh) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileActivation[float32, Tanh], compileActivation[float64, Tanh])
}

func (l ReLU) fusedAct() (actFunc, Layer) { return actReLU, l }
func (l Tanh) fusedAct() (actFunc, Layer) { return actTanh, l }

func compileActivation[T num.Float, L fusedActivation](c *compiler[T], l L) error {
	f, _ := l.fusedAct()
	c.add(&activationOp[T]{f: f}, c.cur, false)
	return nil
}

// activationOp is ReLU or Tanh on its own (not after a Conv2D or Dense).
type activationOp[T num.Float] struct{ f actFunc }

func (o *activationOp[T]) alias() bool             { return false }
func (o *activationOp[T]) scratchSize() (int, int) { return 0, 0 }
func (o *activationOp[T]) prepare()                {}

func (o *activationOp[T]) forward(_ *nativeScratch[T], _ int, in, out []T, _, _ int) {
	switch o.f {
	case actReLU:
		if in32, ok := any(in).([]float32); ok && len(in32) > 0 {
			if f, ok := kernel(relu32AVX512, relu32AVX2, relu32NEON); ok {
				out32 := any(out).([]float32)
				_ = out32[len(in32)-1]
				f(&out32[0], &in32[0], len(in32))
				return
			}
		}
		for j, v := range in {
			if v < 0 {
				v = 0 // NaN passes (and −0), as relu32AVX512
			}
			out[j] = v
		}
	case actTanh:
		gemm.Tanh(out, in)
	}
}

func (o *activationOp[T]) backward(_ *nativeScratch[T], _ int, _, out, gOut, gIn []T, _, _ int) {
	if gIn != nil {
		activationGrad(o.f, gIn, gOut, out)
	}
}

func init() {
	registerPlain[ReLU]()
	registerPlain[Tanh]()
}

var (
	_ TorchExporter = ReLU{}
	_ TorchExporter = Tanh{}
)

// TorchModule is nn.ReLU().
func (ReLU) TorchModule([]int) (string, error) { return "nn.ReLU()", nil }

// TorchModule is nn.Tanh().
func (Tanh) TorchModule([]int) (string, error) { return "nn.Tanh()", nil }
