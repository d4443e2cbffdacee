package nn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/layers"
)

// DType is the element type a model computes in.
type DType int

const (
	// Float32 is the default: half the memory and faster GEMMs.
	Float32 DType = iota
	// Float64 is for reference computations and tests.
	Float64
)

var dtypeNames = [...]string{Float32: "float32", Float64: "float64"}

func (d DType) String() string {
	if d < 0 || int(d) >= len(dtypeNames) {
		return fmt.Sprintf("DType(%d)", int(d))
	}
	return dtypeNames[d]
}

// Spec describes a network: per-example input shape, number of classes, and the layers
// from input to logits (the last layer's output must be [NumClasses]). The models package
// holds ready ones.
type Spec struct {
	Name       string
	InputShape []int // per example, CHW for images
	NumClasses int
	Layers     []layers.Layer
}

// Option configures New.
type Option func(*config)

type config struct {
	dtype   DType
	seed    uint64
	seedSet bool
	engine  Engine
	loss    Loss
}

// Engine is how a Model computes its steps.
type Engine int

const (
	// EngineAuto, the default, is EngineNative when every layer of the spec has a native
	// kernel (all of package layers' do) and EngineGorgonia otherwise.
	EngineAuto Engine = iota
	// EngineNative runs the layers' own kernels on preallocated buffers
	// (layers.Native): parallel over examples, one fused pass per chunk of rows from input
	// to clipped sum, nothing allocated per step. New fails if a layer has no native kernel.
	EngineNative
	// EngineGorgonia runs Gorgonia graphs (tape machine): the reference the native engine
	// is tested against, and the engine of layers from other packages.
	EngineGorgonia
)

func (e Engine) String() string {
	switch e {
	case EngineAuto:
		return "auto"
	case EngineNative:
		return "native"
	case EngineGorgonia:
		return "gorgonia"
	}
	return fmt.Sprintf("Engine(%d)", int(e))
}

// WithEngine picks the engine (default EngineAuto).
func WithEngine(e Engine) Option { return func(c *config) { c.engine = e } }

// WithDType sets the element type (default Float32).
func WithDType(d DType) Option { return func(c *config) { c.dtype = d } }

// WithSeed makes the initial parameters reproducible. Without it they are drawn from a
// randomly seeded generator.
func WithSeed(seed uint64) Option { return func(c *config) { c.seed, c.seedSet = seed, true } }

// Model is a network compiled for a fixed physical batch size: a training graph (forward
// pass, summed loss (Loss: the softmax cross-entropy by default), one backward pass to
// every parametrised layer's pre-activation) and a forward-only evaluation graph, sharing
// one flat parameter vector.
//
// Parameters are exchanged as flat []float64 in declaration order, each tensor row-major
// (Layout); float32 models convert. Batches shorter than BatchSize are padded by the caller
// and masked.
//
// A Model is not safe for concurrent use.
type Model struct {
	name string
	// rawShape and rawLen are the model's input, what InputShape says; inputShape and
	// exampleLen are the input of the trainable network, which the engines see: the
	// front end's output when the spec starts with FrontEnd layers (frontend.go), the
	// same otherwise.
	rawShape   []int
	rawLen     int
	inputShape []int
	numClasses int
	batch      int
	dtype      DType
	layout     []ParamInfo
	groups     []string // parametrised layers, the units of per-layer clipping
	numParams  int
	exampleLen int
	engine     Engine
	loss       Loss
	// engineReason says which layer kept EngineAuto off the native engine.
	engineReason string
	net          network
	layers       []layers.Layer // the spec's layers, for Architecture and export
	front        *frontEnd      // the leading FrontEnd layers, nil if none
}

// plannedLayer is one layer with its shapes and parameters resolved.
type plannedLayer struct {
	layer     layers.Layer
	front     bool   // one of the leading FrontEnd layers, run outside the network
	name      string // "conv1"; empty for parameter-free layers
	in, out   []int
	params    []layers.ParamSpec
	paramOffs []int // flat offset of each parameter
}

// New builds the model described by spec for physical batch size batch: the rows of one
// model call. The engines allocate every layer's activations and gradients for batch rows
// up front (about batch × the activations of one example × 4 bytes for Float32, several
// times over), so batch should not exceed the rows a training step can fill: the largest
// logical batch, times the augmentation multiplicity (cmd/train clamps -physical-batch to
// that). A batch whose activations could not even be addressed is ErrSpec.
func New(spec Spec, batch int, opts ...Option) (*Model, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.seedSet {
		cfg.seed = rand.Uint64()
	}
	if cfg.dtype != Float32 && cfg.dtype != Float64 {
		return nil, fmt.Errorf("%w: dtype %v", ErrSpec, cfg.dtype)
	}
	if batch <= 0 {
		return nil, fmt.Errorf("%w: batch size %d", ErrSpec, batch)
	}
	plan, m, err := planLayers(spec)
	if err != nil {
		return nil, err
	}
	perRow := 0 // the activations of one example, input included
	for i, pl := range plan {
		if i == 0 {
			perRow += num.Prod(pl.in)
		}
		perRow += num.Prod(pl.out)
	}
	if perRow > 0 && batch > math.MaxInt/8/perRow {
		return nil, fmt.Errorf("%w: batch size %d: %d activations per example would need more than %d bytes", ErrSpec, batch, perRow, math.MaxInt)
	}
	if err := cfg.loss.Check(); err != nil {
		return nil, err
	}
	m.batch, m.dtype, m.loss = batch, cfg.dtype, cfg.loss
	init := make([]float64, m.numParams)
	rng := rand.New(rand.NewPCG(cfg.seed, 0x5eed))
	for _, pl := range plan {
		for j, p := range pl.params {
			off := pl.paramOffs[j]
			if err := p.Fill(init[off:off+num.Prod(p.Shape)], rng); err != nil {
				return nil, fmt.Errorf("%w: %s.%s: %v", ErrSpec, pl.name, p.Name, err)
			}
		}
	}
	if cfg.engine < EngineAuto || cfg.engine > EngineGorgonia {
		return nil, fmt.Errorf("%w: engine %v", ErrSpec, cfg.engine)
	}
	m.engine = cfg.engine
	if m.front, err = newFrontEnd(plan); err != nil {
		return nil, err
	}
	plan = plan[m.front.len():] // the engines compile the trainable network only
	if m.engine != EngineGorgonia {
		skip := m.front.absorbable(plan, cfg.dtype)
		switch cfg.dtype {
		case Float32:
			m.net, err = newNativeNet[float32](m, plan, init, skip)
		case Float64:
			m.net, err = newNativeNet[float64](m, plan, init, skip)
		}
		if err == nil && skip > 0 {
			err = m.front.absorb(m, plan, skip)
		}
		switch {
		case err == nil:
			m.engine = EngineNative
			return m, nil
		case m.engine == EngineNative || !errors.Is(err, layers.ErrNotNative):
			return nil, err
		}
		m.engineReason = err.Error()
	}
	m.engine = EngineGorgonia
	switch cfg.dtype {
	case Float32:
		m.net, err = newNet[float32](m, plan, init)
	case Float64:
		m.net, err = newNet[float64](m, plan, init)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Engine is the engine the model runs on: EngineNative or EngineGorgonia.
func (m *Model) Engine() Engine { return m.engine }

// EngineReason says why a model built with EngineAuto runs on the (much slower) Gorgonia
// engine: which layer has no native kernel. It is empty on the native engine or when
// EngineGorgonia was asked for.
func (m *Model) EngineReason() string { return m.engineReason }

// planLayers checks the shapes through the network and lays the parameters out.
func planLayers(spec Spec) ([]plannedLayer, *Model, error) {
	if len(spec.InputShape) == 0 || num.Prod(spec.InputShape) <= 0 || slices.ContainsFunc(spec.InputShape, func(s int) bool { return s <= 0 }) {
		return nil, nil, fmt.Errorf("%w: input shape %v", ErrSpec, spec.InputShape)
	}
	if spec.NumClasses < 2 {
		return nil, nil, fmt.Errorf("%w: %d classes", ErrSpec, spec.NumClasses)
	}
	if len(spec.Layers) == 0 {
		return nil, nil, fmt.Errorf("%w: no layers", ErrSpec)
	}
	m := &Model{
		name:       spec.Name,
		rawShape:   slices.Clone(spec.InputShape),
		rawLen:     num.Prod(spec.InputShape),
		inputShape: slices.Clone(spec.InputShape),
		numClasses: spec.NumClasses,
		exampleLen: num.Prod(spec.InputShape),
		layers:     slices.Clone(spec.Layers),
	}
	leading := true // still in the leading FrontEnd layers
	plan := make([]plannedLayer, len(spec.Layers))
	shape := slices.Clone(spec.InputShape)
	counts := map[string]int{}
	for i, l := range spec.Layers {
		if l == nil {
			return nil, nil, fmt.Errorf("%w: layer %d is nil", ErrSpec, i)
		}
		out, err := l.OutputShape(shape)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: layer %d: %v", ErrSpec, i, err)
		}
		pl := plannedLayer{layer: l, in: shape, out: slices.Clone(out), params: l.Params(shape)}
		_, fixed := l.(layers.FrontEnd)
		if leading = leading && fixed && len(pl.params) == 0; leading {
			pl.front = true
			m.inputShape, m.exampleLen = slices.Clone(pl.out), num.Prod(pl.out)
		}
		if len(pl.params) > 0 {
			counts[l.Kind()]++
			pl.name = fmt.Sprintf("%s%d", l.Kind(), counts[l.Kind()])
			if g, ok := l.(layers.Grouped); ok { // one tap per parametrised sub-layer
				for _, sub := range g.TapGroups(shape) {
					m.groups = append(m.groups, pl.name+"."+sub)
				}
			} else {
				m.groups = append(m.groups, pl.name)
			}
			for _, p := range pl.params {
				pl.paramOffs = append(pl.paramOffs, m.numParams)
				m.layout = append(m.layout, ParamInfo{Name: pl.name + "." + p.Name, Shape: slices.Clone(p.Shape)})
				m.numParams += num.Prod(p.Shape)
			}
		}
		plan[i] = pl
		shape = pl.out
	}
	if len(shape) != 1 || shape[0] != spec.NumClasses {
		return nil, nil, fmt.Errorf("%w: network output %v is not [%d] logits", ErrSpec, shape, spec.NumClasses)
	}
	if m.numParams == 0 {
		return nil, nil, fmt.Errorf("%w: no parameters", ErrSpec)
	}
	return plan, m, nil
}

// Name is the spec's name.
func (m *Model) Name() string { return m.name }

// Spec is the spec the model was built from (a copy of its layer list).
func (m *Model) Spec() Spec {
	return Spec{Name: m.name, InputShape: slices.Clone(m.rawShape), NumClasses: m.numClasses, Layers: slices.Clone(m.layers)}
}

// Architecture describes the model's network as checkpoints store it (ArchitectureOf).
func (m *Model) Architecture() (*Architecture, error) { return ArchitectureOf(m.Spec()) }

// BatchSize is the physical batch size the graphs were built for.
func (m *Model) BatchSize() int { return m.batch }

// DType is the element type.
func (m *Model) DType() DType { return m.dtype }

// InputShape is the per-example input shape (a copy): the raw images for a model that
// starts with a front end (FeatureShape).
func (m *Model) InputShape() []int { return slices.Clone(m.rawShape) }

// NumClasses is the number of logits.
func (m *Model) NumClasses() int { return m.numClasses }

// NumParams is d, the length of the flat parameter and gradient vectors.
func (m *Model) NumParams() int { return m.numParams }

// Layout lists the parameter tensors in flat order (a copy).
func (m *Model) Layout() []ParamInfo {
	out := make([]ParamInfo, len(m.layout))
	for i, p := range m.layout {
		out[i] = ParamInfo{Name: p.Name, Shape: slices.Clone(p.Shape)}
	}
	return out
}

// ParamLayers names the parametrised layers in order ("conv1", …, "dense2"): the units of
// per-layer clipping, so clipping.PerLayer needs len(ParamLayers()) thresholds.
func (m *Model) ParamLayers() []string { return slices.Clone(m.groups) }

// Params writes the parameters into dst, which must have NumParams entries (it panics
// otherwise, like copy into a slice of the wrong length would lose data silently).
func (m *Model) Params(dst []float64) {
	if len(dst) != m.numParams {
		panic(fmt.Sprintf("nn: Params into %d entries, model has %d", len(dst), m.numParams))
	}
	m.net.params(dst)
}

// SetParams replaces the parameters by src (NumParams finite values).
func (m *Model) SetParams(src []float64) error {
	if len(src) != m.numParams {
		return fmt.Errorf("%w: %d values, model has %d", ErrParams, len(src), m.numParams)
	}
	// One pass: every value within ±lim (false for NaN), then which rule a value broke.
	lim := maxFinite
	if m.dtype == Float32 {
		lim = maxFloat32
	}
	for j, v := range src {
		if v >= -lim && v <= lim {
			continue
		}
		if v != v || v > maxFinite || v < -maxFinite {
			return fmt.Errorf("%w: value %d (%s) is %v", ErrParams, j, m.paramName(j), v)
		}
		return fmt.Errorf("%w: value %d (%s) = %v overflows float32", ErrParams, j, m.paramName(j), v)
	}
	m.net.setParams(src)
	return nil
}

const (
	maxFinite  = 1.7976931348623157e308
	maxFloat32 = 3.40282346638528859811704183484516925440e+38
)

// paramName names the tensor holding flat index j.
func (m *Model) paramName(j int) string {
	for _, p := range m.layout {
		if j < p.Size() {
			return p.Name
		}
		j -= p.Size()
	}
	return "?"
}

// LayerState is one layer of a built model: the layer, its per-example input shape and
// its parameters (their specs, and a copy of their values in the same order).
type LayerState struct {
	Layer      layers.Layer
	InputShape []int
	Params     []layers.ParamSpec
	Values     [][]float64
}

// LayerStates returns every layer of m in order, front end included, with its input
// shape and its parameters' current values: what an exporter (package export) needs.
func (m *Model) LayerStates() ([]LayerState, error) {
	plan, _, err := planLayers(m.Spec())
	if err != nil {
		return nil, err
	}
	flat := make([]float64, m.NumParams())
	m.Params(flat)
	out := make([]LayerState, len(plan))
	for i, pl := range plan {
		out[i] = LayerState{Layer: pl.layer, InputShape: slices.Clone(pl.in), Params: slices.Clone(pl.params)}
		for j, p := range pl.params {
			out[i].Values = append(out[i].Values, flat[pl.paramOffs[j]:pl.paramOffs[j]+num.Prod(p.Shape)])
		}
	}
	return out, nil
}
