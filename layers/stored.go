package layers

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/privtrain/privtrain/internal/strictjson"
	"github.com/privtrain/privtrain/smoothing"
)

// A layer of this package describes itself to the outside in its own file: its stored
// settings (registered by an init function with registerSettings or registerPlain,
// listed by Codecs) and, where PyTorch has an equivalent, its PyTorch module (TorchModule,
// and TorchParams where PyTorch lays the parameters out differently). Layers of other
// packages are registered with Register. This is the one layer registry: nn's checkpoint
// architecture reads it (CodecFor, CodecByName), and neither nn nor any other package
// lists the kinds.

// Codec stores one layer type: nn's checkpoint architecture holds a layer l as
// {"type": Kind, "settings": Encode(l)} and rebuilds it with Decode.
type Codec struct {
	// Kind is the name the type is stored under (its Kind() for this package's layers,
	// the name given to Register for others); Type its Go type.
	Kind string
	Type reflect.Type
	// Encode returns l's settings as JSON (snake_case fields), or nil for a layer type
	// without settings. l is of type Type.
	Encode func(l Layer) (json.RawMessage, error)
	// Decode rebuilds a layer from its settings (nil or empty for none). Unknown fields,
	// data after the JSON value and values the type cannot hold are errors.
	Decode func(settings json.RawMessage) (Layer, error)
}

var codecs = struct {
	sync.RWMutex
	byKind  map[string]Codec
	byType  map[reflect.Type]string
	builtin []string // the kinds of this package's layers
}{byKind: map[string]Codec{}, byType: map[reflect.Type]string{}}

// Codecs lists the stored layer types of this package, ordered by kind (not those of
// other packages given to Register).
func Codecs() []Codec {
	codecs.RLock()
	defer codecs.RUnlock()
	out := make([]Codec, 0, len(codecs.builtin))
	for _, k := range codecs.builtin {
		out = append(out, codecs.byKind[k])
	}
	slices.SortFunc(out, func(a, b Codec) int { return strings.Compare(a.Kind, b.Kind) })
	return out
}

// CodecFor is the codec of l's type, if the type is registered.
func CodecFor(l Layer) (Codec, bool) {
	codecs.RLock()
	defer codecs.RUnlock()
	name, ok := codecs.byType[reflect.TypeOf(l)]
	if !ok {
		return Codec{}, false
	}
	return codecs.byKind[name], true
}

// CodecByName is the codec of the layer type stored under name, if one is registered.
func CodecByName(name string) (Codec, bool) {
	codecs.RLock()
	defer codecs.RUnlock()
	c, ok := codecs.byKind[name]
	return c, ok
}

// Register makes layers of type L (of a package other than this one) storable in and
// rebuildable from checkpoints under name: their settings are L's JSON encoding
// (exported fields, or L's own MarshalJSON), decoded strictly (unknown fields are an
// error) into a new L. Call it from an init function of the package that defines L,
// before saving or loading a checkpoint that uses it. The names of this package's own
// layers are taken.
//
// Register panics if name is empty or already registered, or if L is already
// registered under another name: like http.Handle or sql.Register, it is called once at
// program start, and a clash is a programming error.
func Register[L Layer](name string) {
	typ := reflect.TypeFor[L]()
	register(Codec{
		Kind:   name,
		Type:   typ,
		Encode: func(l Layer) (json.RawMessage, error) { return json.Marshal(l) },
		Decode: func(raw json.RawMessage) (Layer, error) {
			var l L
			if len(raw) == 0 {
				raw = json.RawMessage("null")
			}
			if typ.Kind() == reflect.Pointer {
				l = reflect.New(typ.Elem()).Interface().(L)
			}
			if err := strictjson.Unmarshal(raw, &l); err != nil {
				return nil, err
			}
			return l, nil
		},
	}, false)
}

func register(c Codec, builtin bool) {
	codecs.Lock()
	defer codecs.Unlock()
	if c.Kind == "" {
		panic("layers: Register with an empty name")
	}
	if _, dup := codecs.byKind[c.Kind]; dup {
		panic(fmt.Sprintf("layers: Register: layer name %q already registered", c.Kind))
	}
	if old, dup := codecs.byType[c.Type]; dup {
		panic(fmt.Sprintf("layers: Register: type %v already registered as %q", c.Type, old))
	}
	codecs.byKind[c.Kind] = c
	codecs.byType[c.Type] = c.Kind
	if builtin {
		codecs.builtin = append(codecs.builtin, c.Kind)
	}
}

// registerSettings registers layer type L, stored as the JSON of its settings S: to takes
// a layer's settings, from rebuilds the layer from decoded settings (and refuses values
// it cannot hold). Call it from an init function in L's file.
func registerSettings[L Layer, S any](to func(L) S, from func(S) (L, error)) {
	var zero L
	register(Codec{
		Kind: zero.Kind(),
		Type: reflect.TypeFor[L](),
		Encode: func(l Layer) (json.RawMessage, error) {
			return json.Marshal(to(l.(L)))
		},
		Decode: func(raw json.RawMessage) (Layer, error) {
			var s S
			if err := strictjson.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			return from(s)
		},
	}, true)
}

// registerPlain registers layer type L, which has no settings: it is stored without
// any, and settings other than {} or null are refused.
func registerPlain[L Layer]() {
	var zero L
	register(Codec{
		Kind:   zero.Kind(),
		Type:   reflect.TypeFor[L](),
		Encode: func(Layer) (json.RawMessage, error) { return nil, nil },
		Decode: func(raw json.RawMessage) (Layer, error) {
			if s := strings.TrimSpace(string(raw)); s != "" && s != "{}" && s != "null" {
				return nil, fmt.Errorf("%s takes no settings, got %s", zero.Kind(), raw)
			}
			return zero, nil
		},
	}, true)
}

// TorchExporter is a layer with a PyTorch equivalent. export.Torch writes a network as
// a torch.nn.Sequential of its layers' modules, so a layer (of this package or any
// other) that implements it can be exported.
type TorchExporter interface {
	Layer
	// TorchModule is the PyTorch source of a module that computes what the layer
	// computes, for per-example input shape in (NCHW batches in PyTorch), e.g.
	// "nn.Linear(12, 4, bias=True)"; or an error saying why there is none. It is only
	// called with shapes OutputShape accepted.
	TorchModule(in []int) (string, error)
}

// TorchTensor is one entry of a PyTorch module's state_dict.
type TorchTensor struct {
	// Name is the entry's name within the module ("weight", "bias").
	Name   string
	Shape  []int
	Values []float64
	// Float64 stores the tensor as float64 whatever the model's dtype: for fixed values
	// computed in float64 (Scattering2D's filters) whose rounding would change the result.
	Float64 bool
}

// TorchParamsExporter is a TorchExporter whose module lays its parameters out otherwise
// than the layer (Dense: PyTorch's Linear holds the weight's transpose). Without it a
// parameter is exported as it is: named by its ParamSpec.Name, with its ParamSpec.Shape.
type TorchParamsExporter interface {
	TorchExporter
	// TorchParams returns the module's state_dict entries for input shape in, given the
	// layer's parameters, one slice per ParamSpec in flat order.
	TorchParams(in []int, params [][]float64) ([]TorchTensor, error)
}

// TorchDefiner is a TorchExporter whose module is not part of torch.nn (CenterCrop,
// Scattering2D): TorchDefinition is the Python source of the class its TorchModule names,
// which export's Python module defines before the Sequential. The source may use torch,
// nn (torch.nn) and np (numpy) and must define nothing else at module level but names
// starting with its class's name or an underscore.
type TorchDefiner interface {
	TorchExporter
	TorchDefinition() string
}

// torchPair is a PyTorch 2-tuple: "(3, 3)".
func torchPair(a [2]int) string { return fmt.Sprintf("(%d, %d)", a[0], a[1]) }

// torchBool is a Python boolean.
func torchBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// Smoothed is a layer whose parameter tensors DP-LSSGD's Laplacian smoothing should read
// in another order than storage order by default: the order PyTorch stores them in, which
// is what the DP-LSSGD authors' code smooths (each tensor flattened as param.view(-1)).
// nn.Model.SmoothingAxes asks it; a layer that does not implement it is smoothed in
// storage order (smoothing.Flat) tensor by tensor.
type Smoothed interface {
	Layer
	// SmoothingAxes returns one axis per ParamSpec of Params(in), in the same order.
	SmoothingAxes(in []int) []smoothing.Axis
}
