package nn_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/datasets/datatest"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// randomParams gives m random parameters and returns them.
func randomParams(t testing.TB, m *nn.Model, seed uint64) []float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 2))
	p := make([]float64, m.NumParams())
	for i := range p {
		p[i] = rng.NormFloat64() * 0.1
	}
	if err := m.SetParams(p); err != nil {
		t.Fatal(err)
	}
	m.Params(p) // rounded to the model's dtype
	return p
}

// saveModel writes a checkpoint of m (non-private, step 0) to dir and returns its path.
func saveModel(t testing.TB, m *nn.Model, dir string, edit func(*checkpoint.Training)) string {
	t.Helper()
	ds := datatest.Random(t, m.InputShape(), m.NumClasses(), 4)
	tr := newTrainer(t, m, training.TrainerConfig{Data: training.Data{Train: ds, Name: "random"}, Rule: dpoptim.NewSGD(dpoptim.Constant(0.1)), Schedule: training.Schedule{BatchSize: 2, Epochs: 1}})
	c, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(c)
	}
	path := filepath.Join(dir, "m.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	return path
}

// logitsOf runs m on x (one physical batch) and returns the logits.
func logitsOf(t testing.TB, m *nn.Model, x []float32) []float64 {
	t.Helper()
	out := make([]float64, m.BatchSize()*m.NumClasses())
	if err := m.Logits(nn.Batch{X: x}, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func randomInput(m *nn.Model, rows int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 3))
	x := make([]float32, rows*len(flatShape(m.InputShape())))
	for i := range x {
		x[i] = rng.Float32()
	}
	return x
}

func flatShape(s []int) []struct{} {
	n := 1
	for _, v := range s {
		n *= v
	}
	return make([]struct{}, n)
}

// TestArchitectureRoundTrip saves every model of package models in both dtypes and
// rebuilds it from the file alone: same layers and settings, same parameters, and the
// same logits on the same inputs.
func TestArchitectureRoundTrip(t *testing.T) {
	for _, spec := range models.Builtin() {
		for _, dt := range []nn.DType{nn.Float32, nn.Float64} {
			t.Run(spec.Name+"/"+dt.String(), func(t *testing.T) {
				m := newModel(t, spec, 3, nn.WithDType(dt), nn.WithSeed(5))
				want := randomParams(t, m, 9)
				path := saveModel(t, m, t.TempDir(), nil)
				c, err := checkpoint.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				if c.Architecture == nil {
					t.Fatal("checkpoint has no architecture")
				}
				rebuilt, err := nn.SpecOf(c.Architecture, spec.Name)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(rebuilt.Layers, spec.Layers) || !slices.Equal(rebuilt.InputShape, spec.InputShape) || rebuilt.NumClasses != spec.NumClasses {
					t.Errorf("rebuilt spec %+v, saved %+v", rebuilt, spec)
				}
				got, err := nn.LoadModel(path, 3)
				if err != nil {
					t.Fatal(err)
				}
				if got.Name() != spec.Name || got.DType() != dt || !layoutEq(got.Layout(), m.Layout()) {
					t.Errorf("loaded %s %v %v", got.Name(), got.DType(), got.Layout())
				}
				p := make([]float64, got.NumParams())
				got.Params(p)
				if i := firstDiff(p, want); i >= 0 {
					t.Errorf("parameter %d: %v, saved %v", i, p[i], want[i])
				}
				x := randomInput(m, 3, 1)
				if a, b := logitsOf(t, m, x), logitsOf(t, got, x); !slices.Equal(a, b) {
					t.Errorf("logits differ: saved model %v, loaded %v", a[:4], b[:4])
				}
			})
		}
	}
}

// TestOldCheckpointFallback: a checkpoint without an architecture (as written before
// checkpoints stored one) rebuilds from the spec registered under its model name, and
// one whose name nobody registered fails with a clear error.
func TestOldCheckpointFallback(t *testing.T) {
	m := newModel(t, models.MNISTCNN(models.Tanh), 2, nn.WithSeed(1))
	want := randomParams(t, m, 3)
	dir := t.TempDir()
	path := saveModel(t, m, dir, func(c *checkpoint.Training) { c.Architecture = nil })
	got, err := nn.LoadModel(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, got.NumParams())
	got.Params(p)
	if firstDiff(p, want) >= 0 || got.Name() != "mnist-cnn-tanh" {
		t.Error("fallback model differs")
	}

	c, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c.Model = "my-net"
	_, err = nn.ModelFromCheckpoint(c, 2)
	if !errors.Is(err, nn.ErrArchitecture) || !strings.Contains(err.Error(), `"my-net"`) || !strings.Contains(err.Error(), "no architecture") {
		t.Errorf("unknown model without architecture: %v", err)
	}
}

// myTanh is a custom layer (outside package layers) for the registry tests.
type myTanh struct{ Note string }

func (myTanh) Kind() string                        { return "mytanh" }
func (myTanh) OutputShape(in []int) ([]int, error) { return in, nil }
func (myTanh) Params([]int) []layers.ParamSpec     { return nil }
func (myTanh) Apply(x *G.Node, _ []*G.Node) (*G.Node, *layers.Tap, error) {
	y, err := G.Tanh(x)
	return y, nil, err
}

// unregistered is a custom layer nobody registers.
type unregistered struct{ myTanh }

func init() { layers.Register[myTanh]("test.mytanh") }

func customSpec(act layers.Layer) nn.Spec {
	return nn.Spec{Name: "custom", InputShape: []int{1, 3, 3}, NumClasses: 3,
		Layers: []layers.Layer{layers.Flatten{}, layers.Dense{Units: 4, Init: layers.HeNormal{}}, act, layers.Dense{Units: 3, NoBias: true}}}
}

func TestCustomLayerRegistry(t *testing.T) {
	m := newModel(t, customSpec(myTanh{Note: "kept"}), 2, nn.WithDType(nn.Float64))
	randomParams(t, m, 4)
	path := saveModel(t, m, t.TempDir(), nil)
	got, err := nn.LoadModel(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	if l := got.Spec().Layers[2]; l != (myTanh{Note: "kept"}) {
		t.Errorf("custom layer rebuilt as %#v", l)
	}
	if got.Spec().Layers[1] != (layers.Dense{Units: 4, Init: layers.HeNormal{}}) || got.Spec().Layers[3] != (layers.Dense{Units: 3, NoBias: true}) {
		t.Errorf("dense settings lost: %#v", got.Spec().Layers)
	}
	x := randomInput(m, 2, 8)
	if a, b := logitsOf(t, m, x), logitsOf(t, got, x); !slices.Equal(a, b) {
		t.Errorf("logits %v, loaded model %v", a, b)
	}

	// An unregistered type is saved by name and refused on loading, naming the type.
	m2 := newModel(t, customSpec(unregistered{}), 2)
	path2 := saveModel(t, m2, t.TempDir(), nil)
	_, err = nn.LoadModel(path2, 2)
	if !errors.Is(err, nn.ErrArchitecture) || !strings.Contains(err.Error(), "nn_test.unregistered") || !strings.Contains(err.Error(), "layers.Register") {
		t.Errorf("unregistered layer: %v", err)
	}

	// Duplicate registrations are programming errors.
	for name, reg := range map[string]func(){
		"name":  func() { layers.Register[unregistered]("test.mytanh") },
		"type":  func() { layers.Register[myTanh]("test.other") },
		"empty": func() { layers.Register[unregistered]("") },
		"built": func() { layers.Register[unregistered]("dense") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("duplicate %s registration did not panic", name)
				}
			}()
			reg()
		}()
	}
}

// TestArchitectureRefused: settings that do not give the checkpoint's parameters, unknown
// types, unknown fields and bad values are refused with ErrArchitecture.
func TestArchitectureRefused(t *testing.T) {
	m := newModel(t, models.LogisticRegression(), 2)
	path := saveModel(t, m, t.TempDir(), nil)
	for _, tc := range []struct {
		name, layer1, want string
	}{
		{"other units", `{"type":"dense","settings":{"units":11,"no_bias":false,"init":"glorot-uniform"}}`, "[10] logits"},
		{"no bias", `{"type":"dense","settings":{"units":10,"no_bias":true,"init":"glorot-uniform"}}`, "checkpoint holds"},
		{"unknown type", `{"type":"dense2"}`, `"dense2", which is not registered`},
		{"unknown field", `{"type":"dense","settings":{"units":10,"bias":true}}`, `unknown field "bias"`},
		{"bad init", `{"type":"dense","settings":{"units":10,"init":"ones"}}`, `initializer "ones"`},
		{"settings for relu", `{"type":"relu","settings":{"x":1}}`, "takes no settings"},
	} {
		c, err := checkpoint.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tc.layer1), &c.Architecture.Layers[1]); err != nil {
			t.Fatal(err)
		}
		_, err = nn.ModelFromCheckpoint(c, 2)
		if !errors.Is(err, nn.ErrArchitecture) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrArchitecture mentioning %q", tc.name, err, tc.want)
		}
	}
}

// TestPredictor checks Logits and Probabilities for any number of examples against a
// brute-force softmax regression computed from the parameters, in both dtypes, and from
// several goroutines at once.
func TestPredictor(t *testing.T) {
	for _, dt := range []nn.DType{nn.Float32, nn.Float64} {
		m := newModel(t, models.LogisticRegression(), 4, nn.WithDType(dt))
		theta := randomParams(t, m, 1)
		w, b := theta[:7840], theta[7840:] // weight [784, 10], bias [10]
		p := nn.NewPredictor(m)
		tol := 1e-12
		if dt == nn.Float32 {
			tol = 2e-5
		}
		for _, n := range []int{0, 1, 4, 9} {
			x := randomInput(m, n, uint64(n))
			logits := make([]float64, n*10)
			if err := p.Logits(x, logits); err != nil {
				t.Fatal(err)
			}
			probs := make([]float64, n*10)
			if err := p.Probabilities(x, probs); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				var sum, norm float64
				want := make([]float64, 10)
				for k := range 10 {
					want[k] = b[k]
					for j := range 784 {
						want[k] += float64(x[i*784+j]) * w[j*10+k]
					}
				}
				for k := range 10 {
					norm += math.Exp(want[k])
				}
				for k := range 10 {
					if d := math.Abs(logits[i*10+k] - want[k]); d > tol {
						t.Errorf("%v n=%d example %d logit %d: %v, brute force %v", dt, n, i, k, logits[i*10+k], want[k])
					}
					if d := math.Abs(probs[i*10+k] - math.Exp(want[k])/norm); d > tol {
						t.Errorf("%v n=%d example %d probability %d: %v, want %v", dt, n, i, k, probs[i*10+k], math.Exp(want[k])/norm)
					}
					sum += probs[i*10+k]
				}
				if math.Abs(sum-1) > 1e-12 {
					t.Errorf("probabilities sum to %v", sum)
				}
			}
		}
		// Concurrent callers get the answers a single caller gets.
		x := randomInput(m, 11, 42)
		want := make([]float64, 110)
		if err := p.Logits(x, want); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				got := make([]float64, 110)
				if err := p.Logits(x, got); err != nil {
					errs <- err
					return
				}
				if !slices.Equal(got, want) {
					errs <- fmt.Errorf("concurrent logits differ")
					return
				}
				errs <- nil
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		// Bad lengths and values are errors, not panics.
		if err := p.Logits(make([]float32, 785), make([]float64, 10)); !errors.Is(err, nn.ErrBatch) {
			t.Errorf("785 values: %v", err)
		}
		if err := p.Logits(make([]float32, 784), make([]float64, 9)); !errors.Is(err, nn.ErrBatch) {
			t.Errorf("9 slots: %v", err)
		}
		bad := make([]float32, 784*6)
		bad[5*784+3] = float32(math.NaN())
		if err := p.Logits(bad, make([]float64, 60)); !errors.Is(err, nn.ErrBatch) || !strings.Contains(err.Error(), "NaN") {
			t.Errorf("NaN input: %v", err)
		}
	}
}

// TestArchitectureTooLarge: a file describing activations that cannot fit is refused
// before anything is allocated.
func TestArchitectureTooLarge(t *testing.T) {
	m := newModel(t, nn.Spec{Name: "tiny", InputShape: []int{1, 4, 4}, NumClasses: 2, Layers: []layers.Layer{
		layers.Conv2D{Filters: 1, Kernel: [2]int{1, 1}}, layers.MaxPool2D{Kernel: [2]int{4, 4}}, layers.Flatten{}, layers.Dense{Units: 2}}}, 1)
	path := saveModel(t, m, t.TempDir(), nil)
	c, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// The same parameters, but a 2^14 × 2^14 input (2^28 values) pooled down to one cell.
	c.Architecture.InputShape = []int{1, 1 << 14, 1 << 14}
	c.Architecture.Layers[1].Settings = json.RawMessage(`{"kernel":[16384,16384],"stride":[0,0],"padding":[0,0]}`)
	if _, err := nn.ModelFromCheckpoint(c, 1); !errors.Is(err, nn.ErrArchitecture) || !strings.Contains(err.Error(), "exceed") {
		t.Errorf("huge activations: %v", err)
	}
	c.Architecture.InputShape = []int{1 << 24, 1 << 24, 1 << 24}
	if _, err := nn.ModelFromCheckpoint(c, 1); !errors.Is(err, nn.ErrArchitecture) || !strings.Contains(err.Error(), "input shape") {
		t.Errorf("overflowing input shape: %v", err)
	}
}

// FuzzArchitecture: whatever architecture a file declares, rebuilding the model from it
// fails cleanly or gives a model with the checkpoint's parameters; it never panics.
func FuzzArchitecture(f *testing.F) {
	m, err := nn.New(models.LogisticRegression(), 1, nn.WithSeed(1))
	if err != nil {
		f.Fatal(err)
	}
	path := saveModel(f, m, f.TempDir(), nil)
	c, err := checkpoint.Load(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(c.Architecture.String())
	f.Add(`{"input_shape":[784],"num_classes":10,"layers":[{"type":"dense","settings":{"units":10,"no_bias":false,"init":"zeros"}}]}`)
	f.Add(`{"input_shape":[1,28,28],"num_classes":10,"layers":[{"type":"crop","settings":{"height":28,"width":28}},{"type":"flatten"},{"type":"dense","settings":{"units":10,"init":"he-normal"}}]}`)
	f.Add(`{"input_shape":[1,28,28],"num_classes":10,"layers":[{"go_type":"x.Y"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		var a nn.Architecture
		if json.Unmarshal([]byte(s), &a) != nil {
			return
		}
		c.Architecture = &a
		got, err := nn.ModelFromCheckpoint(c, 1)
		if err != nil {
			if !errors.Is(err, nn.ErrArchitecture) {
				t.Fatalf("error %v is not ErrArchitecture", err)
			}
			return
		}
		if !layoutEq(got.Layout(), c.Layout) {
			t.Fatal("model with another layout")
		}
	})
}
