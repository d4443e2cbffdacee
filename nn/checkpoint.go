package nn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/privtrain/privtrain/internal/strictjson"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

// The model's side of a checkpoint (package checkpoint holds the data, package
// tensorfile its file format): Model.WriteCheckpoint writes the architecture and parameters into a
// checkpoint.Training, ModelFromCheckpoint and LoadModel read them back. The trainer's
// side (optimizer, ledger, sampler, lineage) is package training's.

// Architecture, LayerConfig and ParamInfo are package checkpoint's plain data: a
// checkpoint stores them, and this package builds models from them (SpecOf, through the
// layer registry of arch.go).
type (
	Architecture = checkpoint.Architecture
	LayerConfig  = checkpoint.LayerConfig
	ParamInfo    = checkpoint.ParamInfo
)

// ErrArchitecture reports a checkpoint whose network cannot be rebuilt: no stored
// architecture and no registered spec of its name, a layer type that is not registered,
// or settings that do not give the checkpoint's parameter layout (checkpoint's error,
// so that its loader and this package report the same one).
var ErrArchitecture = checkpoint.ErrArchitecture

// stored is the element type of d's parameters in a checkpoint.
func (d DType) stored() tensorfile.DType {
	if d == Float64 {
		return tensorfile.Float64
	}
	return tensorfile.Float32
}

// DTypeOf is the model element type of parameters stored as d (a checkpoint's DType):
// Float64 for tensorfile.Float64, Float32 otherwise.
func DTypeOf(d tensorfile.DType) DType {
	if d == tensorfile.Float64 {
		return Float64
	}
	return Float32
}

// WriteCheckpoint writes the model's part of a checkpoint into c: its name, element type,
// parameter layout, architecture (nil when a layer's settings do not encode, which must
// not stop a training run from saving its state), loss and parameters.
func (m *Model) WriteCheckpoint(c *checkpoint.Training) {
	c.Model, c.DType, c.Layout = m.Name(), m.DType().stored(), m.Layout()
	c.Loss = m.loss.stored()
	c.Architecture = m.storedArchitecture()
	c.Params = make([]float64, m.NumParams())
	m.Params(c.Params)
}

// MatchesCheckpoint reports why c's model part (name, element type, parameter layout,
// loss) is not this model's, as (what differs, checkpoint's value, model's value); ok when it
// is.
func (m *Model) MatchesCheckpoint(c *checkpoint.Training) (what string, ckpt, this any, ok bool) {
	switch {
	case c.Model != m.Name():
		return "model", c.Model, m.Name(), false
	case c.DType != m.DType().stored():
		return "dtype", DTypeOf(c.DType), m.DType(), false
	case !checkpoint.LayoutsEqual(c.Layout, m.Layout()):
		return "parameter layout", c.Layout, m.Layout(), false
	case len(c.Params) != m.NumParams():
		return "parameter count", len(c.Params), m.NumParams(), false
	case c.Loss != m.loss.stored():
		return "loss", lossOf(c), m.loss, false
	}
	return "", nil, nil, true
}

// specFor returns the spec of checkpoint c: its stored architecture or, for a checkpoint
// without one, the spec registered under its model name.
func specFor(c *checkpoint.Training) (Spec, error) {
	if c.Architecture != nil {
		return SpecOf(c.Architecture, c.Model)
	}
	registry.RLock()
	build, ok := registry.specs[c.Model]
	known := make([]string, 0, len(registry.specs))
	for k := range registry.specs {
		known = append(known, k)
	}
	registry.RUnlock()
	if !ok {
		slices.Sort(known)
		hint := "import package models to register its networks"
		if len(known) > 0 {
			hint = "registered: " + strings.Join(known, ", ")
		}
		return Spec{}, fmt.Errorf("%w: the checkpoint stores no architecture (it predates them) and model %q is not a registered spec (%s); build the model with its constructor and load the parameters with SetParams", ErrArchitecture, c.Model, hint)
	}
	spec := build()
	spec.Name = c.Model
	return spec, nil
}

// ModelFromCheckpoint builds c's model for physical batch size batch and loads c's
// parameters into it (c.ModelParams: the averaged ones if the run kept an average): from
// c's stored architecture, or for an old checkpoint without one from the spec registered
// under its model name (RegisterSpec; package models registers its own). The model
// computes in c's DType with c's loss unless opts say otherwise (WithDType, WithEngine,
// WithLoss). It needs nothing of the training run: no data, no privacy state.
func ModelFromCheckpoint(c *checkpoint.Training, batch int, opts ...Option) (*Model, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil checkpoint", ErrArchitecture)
	}
	loss, err := ParseLoss(c.Loss)
	if c.Loss == "" {
		loss, err = CrossEntropy, nil // checkpoints of the cross-entropy store none
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrArchitecture, err)
	}
	spec, err := specFor(c)
	if err != nil {
		return nil, err
	}
	// Check the shapes and the parameter layout before New allocates anything: a file
	// may describe layers whose activations would not fit in memory.
	plan, planned, err := planLayers(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrArchitecture, err)
	}
	if !checkpoint.LayoutsEqual(planned.layout, c.Layout) {
		return nil, fmt.Errorf("%w: the architecture gives parameters %v, the checkpoint holds %v", ErrArchitecture, planned.layout, c.Layout)
	}
	values := 0
	for _, pl := range plan {
		n := 1
		for _, d := range pl.out {
			if n > checkpoint.MaxActivations/max(d, 1) {
				n = checkpoint.MaxActivations + 1
				break
			}
			n *= d
		}
		if values += n; values > checkpoint.MaxActivations {
			return nil, fmt.Errorf("%w: the layers' outputs exceed %d values per example", ErrArchitecture, checkpoint.MaxActivations)
		}
	}
	m, err := New(spec, batch, append([]Option{WithDType(DTypeOf(c.DType)), WithSeed(0), WithLoss(loss)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrArchitecture, err)
	}
	if err := m.SetParams(c.ModelParams()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrArchitecture, err)
	}
	return m, nil
}

// LoadModel reads the checkpoint at path (verified as Load does) and returns its model for
// physical batch size batch with the trained parameters (ModelFromCheckpoint).
func LoadModel(path string, batch int, opts ...Option) (*Model, error) {
	c, err := checkpoint.Load(path)
	if err != nil {
		return nil, err
	}
	m, err := ModelFromCheckpoint(c, batch, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// stored is the loss as a checkpoint records it (Training.Loss): "" for the cross-entropy,
// so that its checkpoints are what they were before the loss was recorded.
func (l Loss) stored() string {
	if l == CrossEntropy {
		return ""
	}
	return l.String()
}

// lossOf names c's loss for a message.
func lossOf(c *checkpoint.Training) string {
	if c.Loss == "" {
		return CrossEntropy.String()
	}
	return c.Loss
}

// storedArchitecture is what a checkpoint of m stores: its architecture, or nil when a
// layer's settings do not encode (a custom MarshalJSON failing), which must not stop a
// training run from saving its state.
func (m *Model) storedArchitecture() *Architecture {
	a, err := m.Architecture()
	if err != nil {
		return nil
	}
	return a
}

// strictJSON decodes one JSON value with no unknown fields and nothing after it.
func strictJSON(s string, dst any) error { return strictjson.Unmarshal([]byte(s), dst) }
