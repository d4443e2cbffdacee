package nn

import (
	"fmt"
	"slices"
	"sync"

	"github.com/privtrain/privtrain/layers"
)

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

// SpecOf rebuilds the network of a as a Spec named name. It fails (ErrArchitecture) for a
// layer whose type is not registered and for settings that do not decode.
func SpecOf(a *Architecture, name string) (Spec, error) {
	if err := a.Check(); err != nil {
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
