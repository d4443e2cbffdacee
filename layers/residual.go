package layers

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/internal/strictjson"
)

// Residual is a residual block (He et al. 2016): its output is
//
//	y = post(body(x) + shortcut(x))
//
// where body and shortcut are sequences of layers of this package (or of other
// Residuals), an empty shortcut is the identity, and post is a GroupNorm with ScaleNorm
// groups when ScaleNorm > 0 (Klause et al. 2022's ScaleNorm: a normalisation after the
// residual addition), else nothing. When the body changes the shape (a stride, more
// channels) the shortcut must project: a 1×1 Conv2D with the same stride, typically.
//
// A Residual is one layer of a network's sequence, so checkpoints, architecture records
// and the PyTorch export hold it as any other; its parameters are those of its body, then
// of its shortcut, then of post, each sub-layer's in its own flat order, named by their
// position: "body.0.weight", "shortcut.0.bias", "post.0.weight" (the PyTorch module's
// state_dict names). Its per-example gradients are its parametrised sub-layers' own
// kinds: Apply returns a Tap whose Nested holds their taps, and the native engine
// compiles the sub-layers in line (see compileResidual), so a clipping Workspace sees
// one gradient per parametrised sub-layer and a per-example norm covers all of them.
type Residual struct {
	Body     []Layer
	Shortcut []Layer
	// ScaleNorm > 0 adds GroupNorm{Groups: ScaleNorm} (with γ and β) after the addition.
	ScaleNorm int
}

// Kind is "residual".
func (Residual) Kind() string { return "residual" }

var (
	_ Grouped   = Residual{}
	_ Container = Residual{}
)

// residualPart is one branch of a block, with the name its parameters are prefixed by.
type residualPart struct {
	name   string
	layers []Layer
}

func (l Residual) parts() []residualPart {
	ps := []residualPart{{"body", l.Body}, {"shortcut", l.Shortcut}}
	if l.ScaleNorm > 0 {
		ps = append(ps, residualPart{"post", []Layer{GroupNorm{Groups: l.ScaleNorm}}})
	}
	return ps
}

// Sublayers is the body, the shortcut and the ScaleNorm, in that order.
func (l Residual) Sublayers() []Layer {
	var out []Layer
	for _, p := range l.parts() {
		out = append(out, p.layers...)
	}
	return out
}

// walk calls f with each sub-layer, its part, its index in the part and its input shape,
// and returns the block's output shape, or an error saying why in does not fit.
func (l Residual) walk(in []int, f func(part string, j int, sub Layer, in []int)) ([]int, error) {
	if len(l.Body) == 0 {
		return nil, fmt.Errorf("residual: no body layers")
	}
	if l.ScaleNorm < 0 {
		return nil, fmt.Errorf("residual: scale_norm %d groups", l.ScaleNorm)
	}
	var body []int
	for _, p := range l.parts() {
		shape := in
		if p.name == "post" {
			shape = body
		}
		for j, sub := range p.layers {
			if sub == nil {
				return nil, fmt.Errorf("residual: %s layer %d is nil", p.name, j)
			}
			out, err := sub.OutputShape(shape)
			if err != nil {
				return nil, fmt.Errorf("residual: %s layer %d (%s): %w", p.name, j, sub.Kind(), err)
			}
			if f != nil {
				f(p.name, j, sub, shape)
			}
			shape = out
		}
		switch p.name {
		case "body":
			if len(shape) != 3 || len(in) != 3 {
				return nil, fmt.Errorf("residual: input %v and body output %v must be CHW images", in, shape)
			}
			body = shape
		case "shortcut":
			if !slices.Equal(shape, body) {
				return nil, fmt.Errorf("residual: body output %v and shortcut output %v differ (a projection shortcut, e.g. a 1×1 conv with the body's stride, makes them equal)", body, shape)
			}
		default:
			body = shape
		}
	}
	return slices.Clone(body), nil
}

// OutputShape is the body's output shape, which the shortcut's must equal.
func (l Residual) OutputShape(in []int) ([]int, error) { return l.walk(in, nil) }

// Params are the sub-layers' parameters in order, named "part.j.name".
func (l Residual) Params(in []int) []ParamSpec {
	var out []ParamSpec
	l.walk(in, func(part string, j int, sub Layer, in []int) {
		for _, p := range sub.Params(in) {
			p.Name = fmt.Sprintf("%s.%d.%s", part, j, p.Name)
			out = append(out, p)
		}
	})
	return out
}

// TapGroups names the parametrised sub-layers ("body.0"; a nested Grouped layer's
// groups under its own name), one per tap, in parameter order.
func (l Residual) TapGroups(in []int) []string {
	var out []string
	l.walk(in, func(part string, j int, sub Layer, in []int) {
		if len(sub.Params(in)) == 0 {
			return
		}
		name := fmt.Sprintf("%s.%d", part, j)
		if g, ok := sub.(Grouped); ok {
			for _, s := range g.TapGroups(in) {
				out = append(out, name+"."+s)
			}
			return
		}
		out = append(out, name)
	})
	return out
}

// Apply adds the body, the shortcut (the identity when empty), their sum (Gorgonia's
// Add) and post to the graph; the tap nests the sub-layers' taps in parameter order.
func (l Residual) Apply(x *G.Node, params []*G.Node) (*G.Node, *Tap, error) {
	var taps []*Tap
	seq := func(layers []Layer, h *G.Node) (*G.Node, error) {
		for j, sub := range layers {
			n := len(sub.Params([]int(h.Shape()[1:])))
			if n > len(params) {
				return nil, fmt.Errorf("residual: %d parameter nodes short", n-len(params))
			}
			out, tap, err := sub.Apply(h, params[:n])
			if err != nil {
				return nil, fmt.Errorf("residual: layer %d (%s): %w", j, sub.Kind(), err)
			}
			params = params[n:]
			if tap != nil {
				taps = append(taps, tap)
			}
			h = out
		}
		return h, nil
	}
	if _, err := l.OutputShape([]int(x.Shape()[1:])); err != nil {
		return nil, nil, err
	}
	// Each branch works on a copy of x: Gorgonia's ops may work in place on a view of
	// their input (GroupNorm's first op is a Reshape of it), which would change the x the
	// other branch reads.
	own := func() (*G.Node, error) {
		one := x.Graph().AddNode(G.NewConstant(oneOf(x)))
		return G.Mul(x, one)
	}
	xb, err := own()
	if err != nil {
		return nil, nil, fmt.Errorf("residual: %w", err)
	}
	body, err := seq(l.Body, xb)
	if err != nil {
		return nil, nil, err
	}
	xs := x
	if len(l.Shortcut) > 0 {
		if xs, err = own(); err != nil {
			return nil, nil, fmt.Errorf("residual: %w", err)
		}
	}
	short, err := seq(l.Shortcut, xs)
	if err != nil {
		return nil, nil, err
	}
	y, err := G.Add(body, short)
	if err != nil {
		return nil, nil, fmt.Errorf("residual add: %w", err)
	}
	if l.ScaleNorm > 0 {
		if y, err = seq([]Layer{GroupNorm{Groups: l.ScaleNorm}}, y); err != nil {
			return nil, nil, err
		}
	}
	if len(params) != 0 {
		return nil, nil, fmt.Errorf("residual: %d parameter nodes left over", len(params))
	}
	if taps == nil {
		return y, nil, nil
	}
	return y, &Tap{Nested: taps}, nil
}

func (l Residual) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileResidual[float32], compileResidual[float64])
}

// compileResidual compiles the block in line, as five stretches of ops on NHWC images:
//
//	fork      y = x                      (backward: dx = dy + the shortcut's dx)
//	body ops
//	switch    y = x, keeping body(x)     (backward: keeps the shortcut's dx; passes on
//	                                      the body's dy, which join kept)
//	shortcut ops
//	join      y = shortcut(x) + body(x)  (backward: dy to both branches)
//	post ops
//
// x and body(x) stay where they are (each activation has its own storage), so switch and
// join read them by index. The sub-layers' ops are the ordinary ones (a conv in the body
// fuses the ReLU after it, its tap is its own), so the block runs at the speed of its
// layers plus a few copies of an activation: forward, fork's and switch's; backward,
// switch's of the body's dy and, with a shortcut of ops, join's of dy into it. The op
// above join writes dy straight into join's scratch and the shortcut's first op its dx
// into switch's (Native.gradTarget); with the identity shortcut fork adds join's dy.
func compileResidual[T num.Float](c *compiler[T], l Residual) error {
	if err := c.image("residual"); err != nil {
		return err
	}
	if _, err := l.OutputShape(shapeOf(c.cur)); err != nil {
		return err
	}
	params := c.params
	xi, x := c.inputIndex(), c.cur
	fork, fk := &forkOp[T]{}, len(c.nv.ops)
	c.add(fork, x, false)
	var err error
	if params, err = c.sub(l.Body, params); err != nil {
		return err
	}
	bi, b := c.inputIndex(), c.cur
	if !b.image || !b.nhwc {
		return fmt.Errorf("layers: residual body ends in a %v, not an image", b)
	}
	sw := &switchOp[T]{nv: c.nv, x: xi, xn: x.n, bn: b.n, k: len(c.nv.ops)}
	fork.sw = sw
	c.add(sw, x, false)
	if params, err = c.sub(l.Shortcut, params); err != nil {
		return err
	}
	if s := c.cur; !s.image || !s.nhwc || s.h != b.h || s.w != b.w || s.c != b.c {
		return fmt.Errorf("layers: residual shortcut gives a %v, the body a %v", s, b)
	}
	join := &joinOp[T]{nv: c.nv, b: bi, n: b.n, k: len(c.nv.ops), identity: len(l.Shortcut) == 0, x: xi}
	for j := sw.k - 1; j > fk; j-- { // the body's last op that computes
		if op := c.nv.ops[j]; !op.alias() {
			if cv, ok := op.(*convOp[T]); ok && cv.act == actNone && cv.gradZ != nil {
				join.bodyTap = cv
			}
			break
		}
	}
	sw.join = join
	c.add(join, b, false)
	if l.ScaleNorm > 0 {
		if params, err = c.sub([]Layer{GroupNorm{Groups: l.ScaleNorm}}, params); err != nil {
			return err
		}
	}
	if len(params) != 0 {
		return fmt.Errorf("layers: residual has %d parameter views left over", len(params))
	}
	return nil
}

// sub compiles layers in line after the current op, taking their parameter views from
// the front of params, and returns the views left.
func (c *compiler[T]) sub(layers []Layer, params [][]T) ([][]T, error) {
	saved, savedI, savedP := c.layers, c.i, c.params
	defer func() { c.layers, c.i, c.params = saved, savedI, savedP }()
	c.layers = layers
	for c.i = 0; c.i < len(layers); c.i++ {
		l := layers[c.i]
		n := len(l.Params(shapeOf(c.cur)))
		if n > len(params) {
			return nil, fmt.Errorf("layers: residual sub-layer %d (%s) needs %d more parameter views", c.i, l.Kind(), n-len(params))
		}
		c.params, params = params[:n], params[n:]
		nl, ok := l.(nativeLayer)
		if !ok {
			return nil, fmt.Errorf("%w: residual sub-layer %d (%s, %T)", ErrNotNative, c.i, l.Kind(), l)
		}
		if err := nl.compileNative(c); err != nil {
			return nil, err
		}
	}
	return params, nil
}

// forkOp starts a block. Forward it is an alias (the body's first op reads x where it
// is; ops never write their input); backward it adds the shortcut's input gradient, which
// switch kept, to the body's.
type forkOp[T num.Float] struct{ sw *switchOp[T] }

func (o *forkOp[T]) alias() bool             { return true }
func (o *forkOp[T]) backwardRuns()           {}
func (o *forkOp[T]) prepare()                {}
func (o *forkOp[T]) scratchSize() (int, int) { return 0, 0 }

func (o *forkOp[T]) forward(*nativeScratch[T], int, []T, []T, int, int) {}

func (o *forkOp[T]) backward(sc *nativeScratch[T], _ int, _, _, gOut, gIn []T, n, lo int) {
	m := n * o.sw.xn
	kept := sc.floats[o.sw.k][:m]
	if o.sw.join.identity {
		kept = o.sw.join.kept(sc, lo, n) // the shortcut's dx is the block's dy
	}
	for j, v := range gOut[:m] {
		gIn[j] = v + kept[j]
	}
}

// switchOp ends the body and starts the shortcut: its output is x again.
type switchOp[T num.Float] struct {
	nv     *Native[T]
	x      int // activation index of the block's input
	xn, bn int // values per row of x and of body(x)
	k      int // this op's index (its scratch holds the shortcut's dx)
	join   *joinOp[T]
}

func (o *switchOp[T]) alias() bool             { return false }
func (o *switchOp[T]) prepare()                {}
func (o *switchOp[T]) scratchSize() (int, int) { return o.xn, 0 }

func (o *switchOp[T]) forward(sc *nativeScratch[T], _ int, _, out []T, n, lo int) {
	if !o.join.identity { // join reads x itself
		copy(out[:n*o.xn], o.nv.rows(sc, o.x, lo, lo+n))
	}
}

// outGrad is the scratch that keeps the shortcut's dx: the shortcut's first op writes it
// there (Native.gradTarget).
func (o *switchOp[T]) outGrad(sc *nativeScratch[T], k, _, n int) []T { return sc.floats[k][:n*o.xn] }

func (o *switchOp[T]) backward(sc *nativeScratch[T], k int, _, _, gOut, gIn []T, n, lo int) {
	if kept := sc.floats[k][:n*o.xn]; !o.join.identity && &gOut[0] != &kept[0] {
		copy(kept, gOut[:n*o.xn])
	}
	if dy := o.join.kept(sc, lo, n); &gIn[0] != &dy[0] {
		copy(gIn[:n*o.bn], dy)
	}
}

// joinOp adds body(x), still in its activation, to the shortcut's output.
type joinOp[T num.Float] struct {
	nv *Native[T]
	b  int // activation index of body(x)
	n  int // values per row
	k  int // this op's index (its scratch holds dy for the body)
	// identity says the shortcut has no ops: its dx is dy, which join keeps, so join
	// passes nothing on to switch and fork reads join's kept dy; forward join reads x
	// (activation index x) and switch copies nothing.
	identity bool
	x        int
	// bodyTap, when the body ends in a Conv2D without activation, is that op: join keeps
	// dy in its tap (dZ is dy), so switch and the conv have nothing to copy.
	bodyTap *convOp[T]
}

// kept is where join keeps the rows lo…lo+n−1 of dy: bodyTap's tap or its scratch.
func (o *joinOp[T]) kept(sc *nativeScratch[T], lo, n int) []T {
	if o.bodyTap != nil {
		return o.bodyTap.outGrad(sc, 0, lo, n)
	}
	return sc.floats[o.k][:n*o.n]
}

func (o *joinOp[T]) alias() bool { return false }
func (o *joinOp[T]) prepare()    {}
func (o *joinOp[T]) scratchSize() (int, int) {
	if o.bodyTap != nil {
		return 0, 0
	}
	return o.n, 0
}

func (o *joinOp[T]) forward(sc *nativeScratch[T], _ int, in, out []T, n, lo int) {
	body := o.nv.rows(sc, o.b, lo, lo+n)
	if o.identity {
		in = o.nv.rows(sc, o.x, lo, lo+n)
	}
	for j, v := range in[:n*o.n] {
		out[j] = v + body[j]
	}
}

// outGrad is where join keeps dy: the op above writes it there (Native.gradTarget).
func (o *joinOp[T]) outGrad(sc *nativeScratch[T], _, lo, n int) []T { return o.kept(sc, lo, n) }

func (o *joinOp[T]) backward(sc *nativeScratch[T], _ int, _, _, gOut, gIn []T, n, lo int) {
	kept := o.kept(sc, lo, n)
	if &gOut[0] != &kept[0] {
		copy(kept, gOut[:n*o.n])
	}
	if !o.identity {
		copy(gIn[:n*o.n], kept)
	}
}

// storedLayer is a sub-layer as a Residual's settings hold it: as nn's architecture holds
// a layer, {"type": kind, "settings": …}.
type storedLayer struct {
	Type     string          `json:"type"`
	Settings json.RawMessage `json:"settings,omitempty"`
}

// residualSettings are a Residual's stored settings:
// {"body":[{"type":"conv","settings":{…}},{"type":"relu"}],"shortcut":[],"scale_norm":0}.
type residualSettings struct {
	Body      []storedLayer `json:"body"`
	Shortcut  []storedLayer `json:"shortcut"`
	ScaleNorm int           `json:"scale_norm"`
}

func encodeLayers(ls []Layer) ([]storedLayer, error) {
	out := []storedLayer{}
	for j, l := range ls {
		if l == nil {
			return nil, fmt.Errorf("layer %d is nil", j)
		}
		c, ok := CodecFor(l)
		if !ok {
			return nil, fmt.Errorf("layer %d (%T) is not registered", j, l)
		}
		raw, err := c.Encode(l)
		if err != nil {
			return nil, fmt.Errorf("layer %d (%s): %w", j, c.Kind, err)
		}
		out = append(out, storedLayer{Type: c.Kind, Settings: raw})
	}
	return out, nil
}

// decodeLayers decodes the part ("body") of a composite layer of kind owner.
func decodeLayers(owner, part string, s []storedLayer) ([]Layer, error) {
	var out []Layer
	for j, sl := range s {
		c, ok := CodecByName(sl.Type)
		if !ok {
			return nil, fmt.Errorf("%s: %s layer %d: unknown layer type %q", owner, part, j, sl.Type)
		}
		l, err := c.Decode(sl.Settings)
		if err != nil {
			return nil, fmt.Errorf("%s: %s layer %d (%s): %w", owner, part, j, sl.Type, err)
		}
		out = append(out, l)
	}
	return out, nil
}

func init() {
	register(Codec{
		Kind: Residual{}.Kind(),
		Type: reflect.TypeFor[Residual](),
		Encode: func(l Layer) (json.RawMessage, error) {
			r := l.(Residual)
			body, err := encodeLayers(r.Body)
			if err != nil {
				return nil, fmt.Errorf("residual body: %w", err)
			}
			short, err := encodeLayers(r.Shortcut)
			if err != nil {
				return nil, fmt.Errorf("residual shortcut: %w", err)
			}
			return json.Marshal(residualSettings{Body: body, Shortcut: short, ScaleNorm: r.ScaleNorm})
		},
		Decode: func(raw json.RawMessage) (Layer, error) {
			var s residualSettings
			if err := strictjson.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			if len(s.Body) == 0 {
				return nil, errors.New("residual: no body layers")
			}
			if s.ScaleNorm < 0 {
				return nil, fmt.Errorf("residual: scale_norm %d", s.ScaleNorm)
			}
			body, err := decodeLayers("residual", "body", s.Body)
			if err != nil {
				return nil, err
			}
			short, err := decodeLayers("residual", "shortcut", s.Shortcut)
			if err != nil {
				return nil, err
			}
			return Residual{Body: body, Shortcut: short, ScaleNorm: s.ScaleNorm}, nil
		},
	}, true)
}

var _ TorchParamsExporter = Residual{}
var _ TorchDefiner = Residual{}

// TorchModule is Residual([body modules], [shortcut modules], [post modules]), the class
// TorchDefinition defines.
func (l Residual) TorchModule(in []int) (string, error) {
	mods := map[string][]string{}
	var err error
	l.walk(in, func(part string, j int, sub Layer, in []int) {
		if err != nil {
			return
		}
		ex, ok := sub.(TorchExporter)
		if !ok {
			err = fmt.Errorf("residual %s layer %d (%T) has no PyTorch equivalent", part, j, sub)
			return
		}
		m, e := ex.TorchModule(in)
		if e != nil {
			err = fmt.Errorf("residual %s layer %d: %w", part, j, e)
			return
		}
		mods[part] = append(mods[part], m)
	})
	if err != nil {
		return "", err
	}
	list := func(part string) string { return "[" + strings.Join(mods[part], ", ") + "]" }
	return fmt.Sprintf("Residual(%s, %s, %s)", list("body"), list("shortcut"), list("post")), nil
}

// TorchParams are the sub-layers' tensors (each as its own module exports them) named
// "part.j.name", as the Residual module's state_dict names them.
func (l Residual) TorchParams(in []int, params [][]float64) ([]TorchTensor, error) {
	var out []TorchTensor
	var err error
	l.walk(in, func(part string, j int, sub Layer, in []int) {
		n := len(sub.Params(in))
		if err != nil || n == 0 {
			return
		}
		if n > len(params) {
			err = fmt.Errorf("residual: %d parameter tensors short", n-len(params))
			return
		}
		mine := params[:n]
		params = params[n:]
		var ts []TorchTensor
		if pe, ok := sub.(TorchParamsExporter); ok {
			if ts, err = pe.TorchParams(in, mine); err != nil {
				return
			}
		} else {
			for q, p := range sub.Params(in) {
				ts = append(ts, TorchTensor{Name: p.Name, Shape: p.Shape, Values: mine[q]})
			}
		}
		for _, t := range ts {
			t.Name = fmt.Sprintf("%s.%d.%s", part, j, t.Name)
			out = append(out, t)
		}
	})
	return out, err
}

// TorchDefinition is the Residual module: post(body(x) + shortcut(x)), an empty
// nn.Sequential being the identity.
func (Residual) TorchDefinition() string {
	return `class Residual(nn.Module):
    """privtrain's layers.Residual: post(body(x) + shortcut(x))."""

    def __init__(self, body, shortcut, post):
        super().__init__()
        self.body = nn.Sequential(*body)
        self.shortcut = nn.Sequential(*shortcut)
        self.post = nn.Sequential(*post)

    def forward(self, x):
        return self.post(self.body(x) + self.shortcut(x))
`
}

// oneOf is 1 in x's dtype.
func oneOf(x *G.Node) any {
	if x.Dtype() == tensor.Float32 {
		return float32(1)
	}
	return 1.0
}
