package nn

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/privtrain/privtrain/layers"
)

// ErrArchitecture reports a checkpoint whose network cannot be rebuilt: no stored
// architecture and no registered spec of its name, a layer type that is not registered,
// or settings that do not give the checkpoint's parameter layout.
var ErrArchitecture = errors.New("nn: cannot rebuild the model")

// Architecture describes a network completely enough to rebuild it: the per-example input
// shape, the number of classes and every layer with its settings. Checkpoints store it
// (metadata "nn.architecture", JSON), so that ModelFromCheckpoint and LoadModel need
// nothing but the file. The element type is the checkpoint's DType.
//
// The layers of package layers are stored under their Kind ("conv", "dense", "maxpool",
// "avgpool", "globalavgpool", "groupnorm", "relu", "tanh", "flatten", "crop",
// "scattering2d") with their settings in snake_case, each layer's file saying how
// (layers.Codecs):
//
//	{"type":"conv","settings":{"filters":16,"kernel":[8,8],"stride":[2,2],"padding":[3,3],"no_bias":false,"init":"glorot-uniform"}}
//	{"type":"dense","settings":{"units":10,"no_bias":false,"init":"glorot-uniform"}}
//	{"type":"maxpool","settings":{"kernel":[2,2],"stride":[1,1],"padding":[0,0]}}
//	{"type":"groupnorm","settings":{"groups":9,"no_affine":true}}
//	{"type":"crop","settings":{"height":24,"width":24}}
//	{"type":"scattering2d","settings":{"j":2,"l":8}}
//	{"type":"tanh"}
//
// Other layer types are stored under the name given to layers.Register, their settings
// being the JSON encoding of the layer value. A layer of a type that was not registered
// is stored with its Go type name only (GoType) and cannot be rebuilt.
type Architecture struct {
	InputShape []int         `json:"input_shape"`
	NumClasses int           `json:"num_classes"`
	Layers     []LayerConfig `json:"layers"`
}

// LayerConfig is one layer of an Architecture.
type LayerConfig struct {
	// Type is the layer's registered name ("conv", …); empty for an unregistered type.
	Type string `json:"type,omitempty"`
	// Settings are the layer's settings as JSON; absent for layers without any.
	Settings json.RawMessage `json:"settings,omitempty"`
	// GoType is the Go type of a layer that was not registered (Type empty), so that
	// the error of a failed rebuild can name it.
	GoType string `json:"go_type,omitempty"`
}

var registry = struct {
	sync.RWMutex
	specs map[string]func() Spec
}{specs: map[string]func() Spec{}}

// RegisterSpec makes the spec that build returns the fallback for checkpoints named name
// that carry no architecture (written before checkpoints stored one). Package models
// registers its ready specs; RegisterSpec panics if name is empty or taken.
func RegisterSpec(name string, build func() Spec) {
	registry.Lock()
	defer registry.Unlock()
	if name == "" || build == nil {
		panic("nn: RegisterSpec with an empty name or a nil function")
	}
	if _, dup := registry.specs[name]; dup {
		panic(fmt.Sprintf("nn: RegisterSpec: %q already registered", name))
	}
	registry.specs[name] = build
}

// ArchitectureOf describes spec's network. Layers of unregistered types are described by
// their Go type only (see Architecture); Spec then fails for them.
func ArchitectureOf(spec Spec) (*Architecture, error) {
	a := &Architecture{InputShape: slices.Clone(spec.InputShape), NumClasses: spec.NumClasses}
	for i, l := range spec.Layers {
		if l == nil {
			return nil, fmt.Errorf("%w: layer %d is nil", ErrSpec, i)
		}
		c, ok := layers.CodecFor(l)
		if !ok {
			a.Layers = append(a.Layers, LayerConfig{GoType: fmt.Sprintf("%T", l)})
			continue
		}
		raw, err := c.Encode(l)
		if err != nil {
			return nil, fmt.Errorf("%w: layer %d (%s): %v", ErrSpec, i, c.Kind, err)
		}
		a.Layers = append(a.Layers, LayerConfig{Type: c.Kind, Settings: raw})
	}
	return a, nil
}

// Spec rebuilds the network as a Spec named name. It fails (ErrArchitecture) for a layer
// whose type is not registered and for settings that do not decode.
func (a *Architecture) Spec(name string) (Spec, error) {
	if err := a.check(); err != nil {
		return Spec{}, err
	}
	spec := Spec{Name: name, InputShape: slices.Clone(a.InputShape), NumClasses: a.NumClasses}
	for i, lc := range a.Layers {
		if lc.Type == "" {
			return Spec{}, fmt.Errorf("%w: layer %d is of type %s, which was not registered with layers.Register when the checkpoint was written", ErrArchitecture, i, lc.GoType)
		}
		c, ok := layers.CodecByName(lc.Type)
		if !ok {
			return Spec{}, fmt.Errorf("%w: layer %d has type %q, which is not registered: call layers.Register for it before loading", ErrArchitecture, i, lc.Type)
		}
		l, err := c.Decode(lc.Settings)
		if err != nil {
			return Spec{}, fmt.Errorf("%w: layer %d (%s): settings: %v", ErrArchitecture, i, lc.Type, err)
		}
		spec.Layers = append(spec.Layers, l)
	}
	return spec, nil
}

// maxActivations bounds the values of all layer outputs of one example in a rebuilt model
// (the CIFAR-10 CNN has about 110,000): more is a damaged or hostile file, not a network
// this package can train.
const maxActivations = 1 << 28

// check validates what can be validated without decoding the layers.
func (a *Architecture) check() error {
	size := 1
	for _, s := range a.InputShape {
		if s <= 0 || s > maxActivations || size > maxActivations/s {
			size = -1
			break
		}
		size *= s
	}
	switch {
	case len(a.InputShape) == 0 || size < 0:
		return fmt.Errorf("%w: input shape %v", ErrArchitecture, a.InputShape)
	case a.NumClasses < 2:
		return fmt.Errorf("%w: %d classes", ErrArchitecture, a.NumClasses)
	case len(a.Layers) == 0:
		return fmt.Errorf("%w: no layers", ErrArchitecture)
	}
	for i, lc := range a.Layers {
		if (lc.Type == "") == (lc.GoType == "") {
			return fmt.Errorf("%w: layer %d has type %q and Go type %q; want exactly one", ErrArchitecture, i, lc.Type, lc.GoType)
		}
	}
	return nil
}

// String is the architecture as compact JSON.
func (a *Architecture) String() string {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Sprintf("Architecture(%v)", err)
	}
	return string(b)
}

// specFor returns the spec of checkpoint c: its stored architecture or, for a checkpoint
// without one, the spec registered under its model name.
func specFor(c *Checkpoint) (Spec, error) {
	if c.Architecture != nil {
		return c.Architecture.Spec(c.Model)
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
// parameters into it (c.ModelParams: the averaged ones if the run kept an average): from c's stored architecture, or for an old checkpoint without one
// from the spec registered under its model name (RegisterSpec; package models registers
// its own). The model computes in c's DType unless opts say otherwise (WithDType,
// WithEngine). It needs nothing of the training run: no data, no privacy state.
func ModelFromCheckpoint(c *Checkpoint, batch int, opts ...Option) (*Model, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil checkpoint", ErrArchitecture)
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
	if !layoutsEqual(planned.layout, c.Layout) {
		return nil, fmt.Errorf("%w: the architecture gives parameters %v, the checkpoint holds %v", ErrArchitecture, planned.layout, c.Layout)
	}
	values := 0
	for _, pl := range plan {
		n := 1
		for _, d := range pl.out {
			if n > maxActivations/max(d, 1) {
				n = maxActivations + 1
				break
			}
			n *= d
		}
		if values += n; values > maxActivations {
			return nil, fmt.Errorf("%w: the layers' outputs exceed %d values per example", ErrArchitecture, maxActivations)
		}
	}
	m, err := New(spec, batch, append([]Option{WithDType(c.DType), WithSeed(0)}, opts...)...)
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
	c, err := Load(path)
	if err != nil {
		return nil, err
	}
	m, err := ModelFromCheckpoint(c, batch, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
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
