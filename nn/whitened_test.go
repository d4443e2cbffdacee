package nn_test

import (
	"slices"
	"testing"

	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/prior"
)

// whitenedSpec is scatter-prior-linear in small: a one-scale scattering of 1×8×8 images,
// GroupNorm, Flatten (48 features), whitened by 400 dead-leaves images, then a Dense.
func whitenedSpec() nn.Spec {
	return nn.Spec{Name: "whitened-small", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: []layers.Layer{
		layers.Whitened{
			Base:  []layers.Layer{layers.Scattering2D{J: 1, L: 2}, layers.GroupNorm{Groups: 1, NoAffine: true}, layers.Flatten{}},
			Prior: prior.DeadLeaves{Scenes: 200, Seed: 3},
			Floor: 0.01,
		},
		layers.Dense{Units: 3},
	}}
}

// TestWhitenedModel: a model starting with a Whitened layer runs it as its front end
// (features of 48 values; the Dense alone on the native engine), and a checkpoint of it
// rebuilds the same model from the file alone, in both dtypes: same settings, the map
// loaded from the prior cache, the same logits on raw inputs.
func TestWhitenedModel(t *testing.T) {
	t.Setenv(prior.CacheEnv, t.TempDir())
	spec := whitenedSpec()
	for _, dt := range []nn.DType{nn.Float32, nn.Float64} {
		m := newModel(t, spec, 3, nn.WithDType(dt), nn.WithSeed(5))
		if m.FrontEnd() != "whitened" || !slices.Equal(m.FeatureShape(), []int{48}) || m.Engine() != nn.EngineNative {
			t.Errorf("%v: front end %q, features %v, engine %v; want whitened, [48], native", dt, m.FrontEnd(), m.FeatureShape(), m.Engine())
		}
		want := randomParams(t, m, 9)
		path := saveModel(t, m, t.TempDir(), nil)
		got, err := nn.LoadModel(path, 3)
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float64, got.NumParams())
		got.Params(p)
		if i := firstDiff(p, want); i >= 0 {
			t.Errorf("%v: parameter %d: %v, saved %v", dt, i, p[i], want[i])
		}
		x := randomInput(m, 3, 1)
		a, b := logitsOf(t, m, x), logitsOf(t, got, x)
		if !slices.Equal(a, b) {
			t.Errorf("%v: logits differ: saved model %v, loaded %v", dt, a, b)
		}
		if slices.Equal(a[:3], a[3:6]) {
			t.Errorf("%v: two inputs, one logit row %v", dt, a[:3])
		}
	}
}
