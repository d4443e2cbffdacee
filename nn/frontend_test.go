package nn_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/scatter"
	"github.com/privtrain/privtrain/training"
)

// scatterSpec is Scattering2D{J: 1, L: 4} on 1×8×8 images (1 + 1·4 = 5 channels of 4×4),
// GroupNorm without affine parameters, and a dense layer to 3 classes.
func scatterSpec() nn.Spec {
	return nn.Spec{Name: "scatter-test", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: []layers.Layer{
		layers.Scattering2D{J: 1, L: 4}, layers.GroupNorm{Groups: 5, NoAffine: true}, layers.Flatten{}, layers.Dense{Units: 3},
	}}
}

// featureSpec is scatterSpec's trainable part on the features themselves.
func featureSpec() nn.Spec {
	s := scatterSpec()
	return nn.Spec{Name: "features", InputShape: []int{5, 4, 4}, NumClasses: 3, Layers: s.Layers[1:]}
}

func randomGrays(t *testing.T, rng *rand.Rand, n int) *datasets.Images {
	t.Helper()
	pix, lab := make([]byte, n*64), make([]byte, n)
	for i := range pix {
		pix[i] = byte(rng.IntN(256))
	}
	for i := range lab {
		lab[i] = byte(rng.IntN(3))
	}
	ds, err := datasets.NewImages([]int{1, 8, 8}, 3, pix, lab)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func batchOf(ds datasets.Dataset, lo, n int) ([]float32, []int) {
	L := datasets.Size(ds)
	x, y := make([]float32, n*L), make([]int, n)
	for i := range n {
		y[i] = ds.Example(lo+i, x[i*L:(i+1)*L])
	}
	return x, y
}

// TestFrontEndModel: a leading Scattering2D runs outside the trainable network, which is
// native; on raw images the model computes what the network without it computes on
// scatter.Transform's features.
func TestFrontEndModel(t *testing.T) {
	const B = 4
	m := newModel(t, scatterSpec(), B, nn.WithDType(nn.Float64), nn.WithSeed(1))
	if m.Engine() != nn.EngineNative || m.EngineReason() != "" {
		t.Fatalf("engine %v (%s), want native: the front end must not force Gorgonia", m.Engine(), m.EngineReason())
	}
	if !slices.Equal(m.InputShape(), []int{1, 8, 8}) || !slices.Equal(m.FeatureShape(), []int{5, 4, 4}) || m.FrontEnd() != "scattering2d" {
		t.Fatalf("input %v, features %v, front end %q", m.InputShape(), m.FeatureShape(), m.FrontEnd())
	}
	// Hand count: dense 5·4·4 = 80 inputs × 3 + 3 biases; no-affine GroupNorm has none.
	if m.NumParams() != 80*3+3 {
		t.Fatalf("%d parameters, want 243", m.NumParams())
	}
	ref := newModel(t, featureSpec(), B, nn.WithDType(nn.Float64), nn.WithSeed(1))
	p := make([]float64, m.NumParams())
	rng := rand.New(rand.NewPCG(1, 2))
	for j := range p {
		p[j] = rng.NormFloat64() * 0.3
	}
	if err := m.SetParams(p); err != nil {
		t.Fatal(err)
	}
	if err := ref.SetParams(p); err != nil {
		t.Fatal(err)
	}
	ds := randomGrays(t, rng, B)
	x, y := batchOf(ds, 0, B)
	feats, err := scatter.Transform(1, 4, x, 1, 8, 8)
	if err != nil {
		t.Fatal(err)
	}
	mask := []bool{true, false, true, true}
	rule := clipping.Flat{C: 0.5}
	got, want := make([]float64, len(p)), make([]float64, len(p))
	sg, err := m.ClippedGradient(nn.Batch{X: x, Labels: y, Mask: mask}, rule, got)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := ref.ClippedGradient(nn.Batch{X: feats, Labels: y, Mask: mask}, rule, want)
	if err != nil {
		t.Fatal(err)
	}
	if sg.Loss != sw.Loss || sg.Correct != sw.Correct || !slices.Equal(got, want) {
		t.Fatalf("clipped gradient on raw images differs from the features' (loss %v vs %v)", sg.Loss, sw.Loss)
	}
	for i := range B {
		g1, g2 := make([]float64, len(p)), make([]float64, len(p))
		if err := m.PerExampleGradient(i, g1); err != nil {
			t.Fatal(err)
		}
		if err := ref.PerExampleGradient(i, g2); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g1, g2) {
			t.Fatalf("per-example gradient %d differs", i)
		}
	}
	// The Gorgonia engine runs the same trainable network behind the same front end.
	gm := newModel(t, scatterSpec(), B, nn.WithDType(nn.Float64), nn.WithSeed(1), nn.WithEngine(nn.EngineGorgonia))
	if err := gm.SetParams(p); err != nil {
		t.Fatal(err)
	}
	gg := make([]float64, len(p))
	if _, err := gm.ClippedGradient(nn.Batch{X: x, Labels: y, Mask: mask}, rule, gg); err != nil {
		t.Fatal(err)
	}
	for j := range gg {
		if d := gg[j] - got[j]; d > 1e-10 || d < -1e-10 {
			t.Fatalf("Gorgonia engine: gradient %d = %v, native %v", j, gg[j], got[j])
		}
	}
	l1, l2 := make([]float64, B*3), make([]float64, B*3)
	if err := nn.NewPredictor(m).Logits(x, l1); err != nil {
		t.Fatal(err)
	}
	if err := ref.Logits(nn.Batch{X: feats}, l2); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l1, l2) {
		t.Fatalf("logits %v, want %v", l1, l2)
	}
	// A raw batch of the wrong length, or with NaN, is a clear error.
	if _, _, err := m.Evaluate(nn.Batch{X: feats, Labels: y}); err == nil {
		t.Error("Evaluate accepted features where raw images are expected")
	}
	x[3*64+5] = float32(nanF())
	if _, _, err := m.Evaluate(nn.Batch{X: x, Labels: y}); err == nil {
		t.Error("Evaluate accepted NaN")
	}
}

func nanF() float64 { var z float64; return z / z }

// TestFrontEndArchitecture: checkpoints store the Scattering2D with its settings and
// rebuild the same front end.
func TestFrontEndArchitecture(t *testing.T) {
	spec := scatterSpec()
	a, err := nn.ArchitectureOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Layers[0].Settings) != `{"j":1,"l":4}` || a.Layers[0].Type != "scattering2d" {
		t.Fatalf("stored %+v", a.Layers[0])
	}
	got, err := nn.SpecOf(a, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Layers, spec.Layers) {
		t.Errorf("rebuilt %+v, want %+v", got.Layers, spec.Layers)
	}
}

// counting is a fixed front end that doubles its input and counts the examples it
// transformed, to show the trainer transforms each example once.
type counting struct{ n *atomic.Int64 }

func (counting) Kind() string                        { return "double" }
func (counting) OutputShape(in []int) ([]int, error) { return in, nil }
func (counting) Params([]int) []layers.ParamSpec     { return nil }
func (counting) Apply(x *G.Node, _ []*G.Node) (*G.Node, *layers.Tap, error) {
	y, err := G.Add(x, x)
	return y, nil, err
}
func (c counting) NewTransform(in []int) (func([]float32) ([]float32, error), error) {
	L := 1
	for _, d := range in {
		L *= d
	}
	return func(x []float32) ([]float32, error) {
		c.n.Add(int64(len(x) / L))
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = 2 * v
		}
		return y, nil
	}, nil
}

// TestTrainerFrontEndOnce: the trainer transforms every training and test example exactly
// once however many steps and epochs it runs, reports it through OnFrontEnd, and trains
// bit for bit as a trainer on the precomputed features of a model without the front end.
func TestTrainerFrontEndOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	train, test := randomGrays(t, rng, 40), randomGrays(t, rng, 10)
	var n atomic.Int64
	spec := nn.Spec{Name: "double", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: []layers.Layer{
		counting{&n}, layers.Flatten{}, layers.Dense{Units: 3},
	}}
	run := func(m *nn.Model, tr, te datasets.Dataset, onFront func(training.FrontEndProgress)) []float64 {
		tn, err := training.NewTrainer(m, training.TrainerConfig{
			Data:      training.Data{Train: tr, Test: te, Name: "random"},
			Rule:      dpoptim.NewSGD(dpoptim.Constant(0.5)),
			Schedule:  training.Schedule{BatchSize: 8, Epochs: 3},
			Privacy:   &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5},
			Seed:      seedPtr(9),
			Callbacks: training.Callbacks{OnFrontEnd: onFront},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tn.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		p := make([]float64, m.NumParams())
		m.Params(p)
		return p
	}
	var calls []training.FrontEndProgress
	m := newModel(t, spec, 4, nn.WithSeed(3))
	got := run(m, train, test, func(p training.FrontEndProgress) { calls = append(calls, p) })
	if n.Load() != 50 {
		t.Errorf("front end transformed %d examples, want 40 + 10 once each", n.Load())
	}
	// One call before (nothing computed), progress after each chunk of each set (40
	// training examples in one chunk, then 10 test ones: 40, then 50), one after.
	last := len(calls) - 1
	if len(calls) != 4 || calls[0].Done || calls[0].Computed != 0 || !calls[last].Done || calls[0].Examples != 50 || calls[last].FrontEnd != "double → flatten" || // the Flatten after a front end joins it
		calls[1].Done || calls[1].Computed != 40 || calls[2].Done || calls[2].Computed != 50 {
		t.Errorf("OnFrontEnd calls %+v, want one before, progress at 40 and 50 of 50 examples, one after", calls)
	}
	// Reference: the features computed by the dataset, a model without the front end.
	plain := nn.Spec{Name: "double", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: spec.Layers[1:]}
	want := run(newModel(t, plain, 4, nn.WithSeed(3)), scaled{train}, scaled{test}, nil)
	if !slices.Equal(got, want) {
		t.Error("training on the front end's features differs from training on precomputed ones")
	}
}

// scaled doubles a dataset's values.
type scaled struct{ datasets.Dataset }

func (s scaled) Example(i int, dst []float32) int {
	y := s.Dataset.Example(i, dst)
	for j := range dst {
		dst[j] *= 2
	}
	return y
}

// TestTrainerFrontEndCancel: a cancelled context stops the front end before its first
// chunk; nothing is trained, and the next Run computes the features and trains.
func TestTrainerFrontEndCancel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	train := randomGrays(t, rng, 20)
	var n atomic.Int64
	spec := nn.Spec{Name: "double", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: []layers.Layer{
		counting{&n}, layers.Flatten{}, layers.Dense{Units: 3},
	}}
	tn, err := training.NewTrainer(newModel(t, spec, 4, nn.WithSeed(3)), training.TrainerConfig{
		Data:     training.Data{Train: train},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Schedule: training.Schedule{BatchSize: 5, Epochs: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := tn.Run(ctx)
	if !errors.Is(err, context.Canceled) || res.Steps != 0 || n.Load() != 0 {
		t.Fatalf("cancelled Run: %v, %d steps, %d examples transformed", err, res.Steps, n.Load())
	}
	if res, err = tn.Run(context.Background()); err != nil || res.Steps != 4 || n.Load() != 20 {
		t.Fatalf("second Run: %v, %d steps, %d examples transformed", err, res.Steps, n.Load())
	}
}
