package nn

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/privtrain/privtrain/layers"
)

// layerCodec turns one layer type into settings and back (see layers.Codec).
type layerCodec struct {
	encode func(layers.Layer) (json.RawMessage, error)
	decode func(json.RawMessage) (layers.Layer, error)
}

var registry = struct {
	sync.RWMutex
	byName map[string]layerCodec
	byType map[reflect.Type]string
	specs  map[string]func() Spec
}{byName: map[string]layerCodec{}, byType: map[reflect.Type]string{}, specs: map[string]func() Spec{}}

// RegisterLayer makes layers of type L storable in and rebuildable from checkpoints under
// name: their settings are L's JSON encoding (exported fields, or L's own MarshalJSON),
// decoded strictly (unknown fields are an error) into a new L. Call it from an init
// function of the package that defines L, before saving or loading a checkpoint that
// uses it. The names of package layers' own layers are taken.
//
// RegisterLayer panics if name is empty or already registered, or if L is already
// registered under another name: like http.Handle or sql.Register, it is called once at
// program start, and a clash is a programming error.
func RegisterLayer[L layers.Layer](name string) {
	typ := reflect.TypeFor[L]()
	registerCodec(name, typ, layerCodec{
		encode: func(l layers.Layer) (json.RawMessage, error) { return json.Marshal(l) },
		decode: func(raw json.RawMessage) (layers.Layer, error) {
			var l L
			if len(raw) == 0 {
				raw = json.RawMessage("null")
			}
			if typ.Kind() == reflect.Pointer {
				l = reflect.New(typ.Elem()).Interface().(L)
			}
			if err := strictJSON(string(raw), &l); err != nil {
				return nil, err
			}
			return l, nil
		},
	})
}

func registerCodec(name string, typ reflect.Type, c layerCodec) {
	registry.Lock()
	defer registry.Unlock()
	if name == "" {
		panic("nn: RegisterLayer with an empty name")
	}
	if _, dup := registry.byName[name]; dup {
		panic(fmt.Sprintf("nn: RegisterLayer: layer name %q already registered", name))
	}
	if old, dup := registry.byType[typ]; dup {
		panic(fmt.Sprintf("nn: RegisterLayer: type %v already registered as %q", typ, old))
	}
	registry.byName[name] = c
	registry.byType[typ] = name
}

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

// The layers of package layers register their own codecs, each in its file.
func init() {
	for _, c := range layers.Codecs() {
		registerCodec(c.Kind, c.Type, layerCodec{encode: c.Encode, decode: c.Decode})
	}
}

// ArchitectureOf describes spec's network. Layers of unregistered types are described by
// their Go type only (see Architecture); Spec then fails for them.
func ArchitectureOf(spec Spec) (*Architecture, error) {
	a := &Architecture{InputShape: slices.Clone(spec.InputShape), NumClasses: spec.NumClasses}
	registry.RLock()
	defer registry.RUnlock()
	for i, l := range spec.Layers {
		if l == nil {
			return nil, fmt.Errorf("%w: layer %d is nil", ErrSpec, i)
		}
		name, ok := registry.byType[reflect.TypeOf(l)]
		if !ok {
			a.Layers = append(a.Layers, LayerConfig{GoType: fmt.Sprintf("%T", l)})
			continue
		}
		raw, err := registry.byName[name].encode(l)
		if err != nil {
			return nil, fmt.Errorf("%w: layer %d (%s): %v", ErrSpec, i, name, err)
		}
		a.Layers = append(a.Layers, LayerConfig{Type: name, Settings: raw})
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
	registry.RLock()
	defer registry.RUnlock()
	for i, lc := range a.Layers {
		if lc.Type == "" {
			return Spec{}, fmt.Errorf("%w: layer %d is of type %s, which was not registered with nn.RegisterLayer when the checkpoint was written", ErrArchitecture, i, lc.GoType)
		}
		c, ok := registry.byName[lc.Type]
		if !ok {
			return Spec{}, fmt.Errorf("%w: layer %d has type %q, which is not registered: call nn.RegisterLayer for it before loading", ErrArchitecture, i, lc.Type)
		}
		l, err := c.decode(lc.Settings)
		if err != nil {
			return Spec{}, fmt.Errorf("%w: layer %d (%s): settings: %v", ErrArchitecture, i, lc.Type, err)
		}
		spec.Layers = append(spec.Layers, l)
	}
	return spec, nil
}
