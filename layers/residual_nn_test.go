package layers_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/datatest"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// residualSpec is a small residual network on 3×8×8 images: a stem conv, an identity
// block with ScaleNorm, a projecting block that halves the image, global pooling and a
// dense layer.
func residualSpec() nn.Spec {
	return nn.Spec{Name: "residual-test", InputShape: []int{3, 8, 8}, NumClasses: 3, Layers: []layers.Layer{
		conv3(4, 1), layers.ReLU{},
		layers.Residual{Body: []layers.Layer{layers.WSConv2D(conv3(4, 1)), layers.GroupNorm{Groups: 2}, layers.ReLU{}, conv3(4, 1)}, ScaleNorm: 2},
		layers.ReLU{},
		layers.Residual{
			Body:     []layers.Layer{conv3(6, 2), layers.ReLU{}, conv3(6, 1)},
			Shortcut: []layers.Layer{layers.Conv2D{Filters: 6, Kernel: [2]int{1, 1}, Stride: [2]int{2, 2}}},
		},
		layers.ReLU{}, layers.GlobalAvgPool2D{}, layers.Flatten{}, layers.Dense{Units: 3},
	}}
}

// TestResidualModelEngines: the residual network runs on the native engine, its
// per-layer clipping groups are the nested layers, in float64 its per-example gradients
// and clipped sum equal the Gorgonia engine's to 1e-10, and neither engine changes the
// parameters while it computes them.
func TestResidualModelEngines(t *testing.T) {
	const batch = 6
	var models []*nn.Model
	for _, eng := range []nn.Engine{nn.EngineNative, nn.EngineGorgonia} {
		m, err := nn.New(residualSpec(), batch, nn.WithDType(nn.Float64), nn.WithEngine(eng), nn.WithSeed(7))
		if err != nil {
			t.Fatalf("%v: %v", eng, err)
		}
		if m.Engine() != eng {
			t.Fatalf("engine %v, want %v (%s)", m.Engine(), eng, m.EngineReason())
		}
		models = append(models, m)
	}
	want := []string{"conv1", "residual1.body.0", "residual1.body.1", "residual1.body.3", "residual1.post.0",
		"residual2.body.0", "residual2.body.2", "residual2.shortcut.0", "dense1"}
	if g := models[0].ParamLayers(); !reflect.DeepEqual(g, want) {
		t.Errorf("clipping groups %v, want %v", g, want)
	}
	ds := datatest.Random(t, []int{3, 8, 8}, 3, batch)
	b := batchOf(t, ds, batch)
	var grads [2][][]float64
	var sums [2][]float64
	for e, m := range models {
		before := make([]float64, m.NumParams())
		m.Params(before)
		sums[e] = make([]float64, m.NumParams())
		if _, err := m.ClippedGradient(b, clipping.PerLayerEqual(0.5, len(want)), sums[e]); err != nil {
			t.Fatal(err)
		}
		after := make([]float64, m.NumParams())
		m.Params(after)
		if i := bitsDiffer(before, after); i >= 0 {
			t.Errorf("%v: computing a gradient changed parameter %d (the graph worked in place on the weights?)", m.Engine(), i)
		}
		for i := range batch {
			g := make([]float64, m.NumParams())
			if err := m.PerExampleGradient(i, g); err != nil {
				t.Fatal(err)
			}
			grads[e] = append(grads[e], g)
		}
	}
	for i := range batch {
		if e := relErr(grads[0][i], grads[1][i]); !(e < 1e-10) {
			t.Errorf("example %d: native vs Gorgonia per-example gradient, relative error %.3g", i, e)
		}
	}
	if e := relErr(sums[0], sums[1]); !(e < 1e-10) {
		t.Errorf("per-layer clipped sum: native vs Gorgonia, relative error %.3g", e)
	}
}

func batchOf(t *testing.T, ds datasets.Dataset, n int) nn.Batch {
	t.Helper()
	size := datasets.Size(ds)
	x := make([]float32, n*size)
	labels := make([]int, n)
	for i := range n {
		labels[i] = ds.Example(i, x[i*size:(i+1)*size])
	}
	return nn.Batch{X: x, Labels: labels}
}

func relErr(a, b []float64) float64 {
	var d, s float64
	for j := range a {
		d = max(d, math.Abs(a[j]-b[j]))
		s += b[j] * b[j]
	}
	return d / math.Sqrt(s)
}

// TestResidualTrainsReproducibly: DP-SGD on the residual network (native engine, float32)
// gives the same parameters bit for bit in two runs with the same seed, and a run
// stopped after 5 steps, saved, loaded into a model initialised otherwise and finished
// gives the uninterrupted run's parameters bit for bit and its ε.
func TestResidualTrainsReproducibly(t *testing.T) {
	ds := datatest.Random(t, []int{3, 8, 8}, 3, 96)
	trainer := func(epochs int, init uint64, onStep func(training.StepProgress) error) *training.Trainer {
		m, err := nn.New(residualSpec(), 16, nn.WithSeed(init))
		if err != nil {
			t.Fatal(err)
		}
		if m.Engine() != nn.EngineNative {
			t.Fatalf("engine %v (%s), want native", m.Engine(), m.EngineReason())
		}
		seed := uint64(9)
		tr, err := training.NewTrainer(m, training.TrainerConfig{
			Data:      training.Data{Train: ds, Name: "random"},
			Rule:      dpoptim.NewSGD(dpoptim.Constant(0.5)),
			Privacy:   &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-3},
			Schedule:  training.Schedule{BatchSize: 24, Epochs: epochs},
			Seed:      &seed,
			Callbacks: training.Callbacks{OnStep: onStep},
		})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	runAll := func(tr *training.Trainer) []float64 {
		if _, err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		p := make([]float64, tr.Model().NumParams())
		tr.Model().Params(p)
		return p
	}
	start := make([]float64, 0)
	whole := trainer(3, 5, nil)
	start = append(start, make([]float64, whole.Model().NumParams())...)
	whole.Model().Params(start)
	a := runAll(whole)
	b := runAll(trainer(3, 5, nil))
	if i := bitsDiffer(a, b); i >= 0 {
		t.Errorf("two runs with one seed differ at parameter %d: %v, %v", i, a[i], b[i])
	}
	if bitsDiffer(a, start) < 0 {
		t.Fatal("training did not move the parameters")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := trainer(3, 5, func(p training.StepProgress) error {
		if p.GlobalStep == 5 {
			cancel()
		}
		return nil
	})
	if _, err := first.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if first.Steps() != 5 {
		t.Fatalf("first piece stopped at step %d", first.Steps())
	}
	c, err := first.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "res.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	loaded, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	back, err := nn.SpecOf(loaded.Architecture, "residual-test")
	if err != nil || !reflect.DeepEqual(back.Layers, residualSpec().Layers) {
		t.Fatalf("stored architecture rebuilds as %#v (%v)", back.Layers, err)
	}
	second := trainer(3, 6, nil)
	if err := second.Restore(loaded); err != nil {
		t.Fatal(err)
	}
	r := runAll(second)
	if i := bitsDiffer(a, r); i >= 0 {
		t.Errorf("resumed run differs at parameter %d (%s): %v, uninterrupted %v", i, whole.Model().Layout()[paramIndex(whole.Model(), i)].Name, r[i], a[i])
	}
	ea, _ := whole.Spent()
	eb, _ := second.Spent()
	if ea != eb {
		t.Errorf("ε uninterrupted %+v, resumed %+v", ea, eb)
	}
}

func bitsDiffer(a, b []float64) int {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}
