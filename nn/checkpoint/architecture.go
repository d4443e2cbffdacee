package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
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

// MaxActivations bounds the values of all layer outputs of one example in a rebuilt model
// (the CIFAR-10 CNN has about 110,000): more is a damaged or hostile file, not a network
// this package can train.
const MaxActivations = 1 << 28

// Check validates what can be validated without decoding the layers (package nn
// decodes them: nn.SpecOf).
func (a *Architecture) Check() error {
	size := 1
	for _, s := range a.InputShape {
		if s <= 0 || s > MaxActivations || size > MaxActivations/s {
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
