package nn_test

import (
	"strings"
	"testing"

	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// TestEngineReasonNamesTheLayer: a layer without a native kernel keeps EngineAuto on
// Gorgonia, and the model says which one.
func TestEngineReasonNamesTheLayer(t *testing.T) {
	m := newModel(t, customSpec(myTanh{}), 2)
	if m.Engine() != nn.EngineGorgonia {
		t.Fatalf("engine %v, want gorgonia", m.Engine())
	}
	if r := m.EngineReason(); !strings.Contains(r, "layer 2") || !strings.Contains(r, "mytanh") {
		t.Errorf("EngineReason %q does not name layer 2 (mytanh)", r)
	}
	if _, err := nn.New(customSpec(myTanh{}), 2, nn.WithEngine(nn.EngineNative)); err == nil || !strings.Contains(err.Error(), "layer 2") {
		t.Errorf("EngineNative: error %v, want one naming layer 2", err)
	}
	native := newModel(t, customSpec(layers.Tanh{}), 2)
	if native.Engine() != nn.EngineNative || native.EngineReason() != "" {
		t.Errorf("all-native model: engine %v, reason %q", native.Engine(), native.EngineReason())
	}
}
