package training_test

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/datasets/datatest"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
	"github.com/privtrain/privtrain/training"
)

// A file in the layout written before dpoptim.State (the noise generator as one float64
// per byte) still loads, to the same state, and restores.
func TestLoadOldNoiseLayout(t *testing.T) {
	dir := t.TempDir()
	path, c := savedCheckpoint(t, dir, 1)
	f, err := tensorfile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	noise := f.Tensors["optimizer/noise"]
	if noise.DType != tensorfile.Uint8 {
		t.Fatalf("noise stored as %v, want U8", noise.DType)
	}
	old := make([]float64, len(noise.Data))
	for i, b := range noise.Data {
		old[i] = float64(b)
	}
	f.Tensors["optimizer/noise"] = tensorfile.F64([]int{len(old)}, old)
	oldPath := filepath.Join(dir, "old.ckpt")
	if err := tensorfile.WriteFile(oldPath, f); err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.Load(oldPath)
	if err != nil {
		t.Fatal(err)
	}
	if !got.OptimizerState.Equal(c.OptimizerState) || string(got.OptimizerState.Noise) != string(noise.Data) {
		t.Errorf("old layout loads %v, saved %v", got.OptimizerState, c.OptimizerState)
	}
}

// A rule's scalar (AdaGrad-norm's b²) is stored as a rank-0 tensor and read back; the old
// layout's length-1 vector is read by the rule as the same scalar.
func TestCheckpointRuleScalar(t *testing.T) {
	train, _ := embedded(t, 200)
	rule := func() dpoptim.Rule { return &dpoptim.ADPAdaGradNorm{Eta: 1, B0: 2, Nu: 1e-5, C: 0.5} }
	tr := newTrainer(t, newModel(t, models.LogisticRegression(), 32, nn.WithSeed(1)), training.TrainerConfig{
		Data:     training.Data{Train: train, Name: "mnist-200"},
		Rule:     rule(),
		Schedule: training.Schedule{BatchSize: 50, Epochs: 1},
		Seed:     seedPtr(3),
	})
	if s, ok := tr.Seed(); !ok || s != 3 {
		t.Errorf("Seed() = %d, %v; want 3, true", s, ok)
	}
	run(t, tr)
	c, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	b2, ok := c.OptimizerState.Scalars["b2"]
	if !ok || !(b2 > 4) { // b₀² = 4, and every step adds at least ν
		t.Fatalf("state %v, want a scalar b2 > 4", c.OptimizerState)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "run.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	f, err := tensorfile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Tensors["optimizer/b2"]; len(s.Shape) != 0 {
		t.Errorf("b2 stored with shape %v, want a scalar", s.Shape)
	}
	got, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !got.OptimizerState.Equal(c.OptimizerState) {
		t.Errorf("loaded %v, saved %v", got.OptimizerState, c.OptimizerState)
	}
	f.Tensors["optimizer/b2"] = tensorfile.F64([]int{1}, []float64{b2}) // the old layout
	oldPath := filepath.Join(dir, "old.ckpt")
	if err := tensorfile.WriteFile(oldPath, f); err != nil {
		t.Fatal(err)
	}
	old, err := checkpoint.Load(oldPath)
	if err != nil {
		t.Fatal(err)
	}
	fresh := rule()
	if err := fresh.SetState(old.OptimizerState); err != nil {
		t.Fatal(err)
	}
	if s := fresh.State(); s.Scalars["b2"] != b2 || s.Step != c.Step {
		t.Errorf("old layout restores %v, want b2 = %v at step %d", s, b2, c.Step)
	}
}

// The plan's stored JSON keeps the schema of the files written before Plan serialised
// itself (keys written by hand here), round-trips, and refuses what NewTrainer could not
// have made.
func TestPlanJSON(t *testing.T) {
	stored := `{"n":8000,"batch":2048,"physical_batch":128,"sampling":"poisson","q":0.256,` +
		`"steps_per_epoch":4,"epochs":30,"steps":120,"private":true,"noise_multiplier":4.3637,` +
		`"noise_schedule":true,"calibrated":true,"clip":1,"clip_rule":"flat C=1","delta":1e-05,"target_epsilon":3}`
	want := training.Plan{
		DatasetSize: 8000, BatchSize: 2048, PhysicalBatch: 128, Sampling: training.Poisson, SampleRate: 0.256,
		StepsPerEpoch: 4, Epochs: 30, Steps: 120, Private: true, NoiseMultiplier: 4.3637, NoiseSchedule: true,
		Calibrated: true, Clip: 1, ClipRule: "flat C=1", Delta: 1e-5, TargetEpsilon: 3,
		Spent: accountant.Spent{Epsilon: math.Inf(1)},
	}
	var got training.Plan
	if err := json.Unmarshal([]byte(stored), &got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var keys, storedKeys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(stored), &storedKeys); err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(storedKeys) {
		t.Errorf("encoded %s, want the keys of %s", b, stored)
	}
	for k, v := range storedKeys {
		if keys[k] != v {
			t.Errorf("encoded %s = %v, want %v", k, keys[k], v)
		}
	}
	got = training.Plan{}
	if err := json.Unmarshal(b, &got); err != nil || got != want {
		t.Errorf("round trip %+v, %v", got, err)
	}
	// noise_schedule is left out when false (as before).
	want.NoiseSchedule = false
	if b, _ := json.Marshal(want); strings.Contains(string(b), "noise_schedule") {
		t.Errorf("encoded %s with noise_schedule false", b)
	}
	for name, bad := range map[string]string{
		"unknown field":       strings.Replace(stored, `"n":8000`, `"n":8000,"extra":1`, 1),
		"q":                   strings.Replace(stored, `"q":0.256`, `"q":0.5`, 1),
		"steps":               strings.Replace(stored, `"steps":120`, `"steps":121`, 1),
		"sampling":            strings.Replace(stored, `"poisson"`, `"random"`, 1),
		"delta":               strings.Replace(stored, `"delta":1e-05`, `"delta":1`, 1),
		"non-private w/ clip": strings.Replace(stored, `"private":true`, `"private":false`, 1),
		"trailing data":       stored + "{}",
	} {
		p := want
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("%s: decoded %+v", name, p)
		} else if p != want {
			t.Errorf("%s: a refused decode changed the plan", name)
		}
	}
}

// TestStoredLayoutJSON: the parameter layout is stored as the schema says,
// [{"name", "shape"}…] in flat order, and the architecture as Architecture's documented
// JSON.
func TestStoredLayoutJSON(t *testing.T) {
	m := newModel(t, models.LogisticRegression(), 2, nn.WithSeed(1))
	f, err := tensorfile.ReadFile(saveModel(t, m, t.TempDir(), nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.Metadata["nn.layout"], `[{"name":"dense1.weight","shape":[784,10]},{"name":"dense1.bias","shape":[10]}]`; got != want {
		t.Errorf("nn.layout %s, want %s", got, want)
	}
	if got, want := f.Metadata["nn.architecture"], `{"input_shape":[1,28,28],"num_classes":10,"layers":[{"type":"flatten"},{"type":"dense","settings":{"units":10,"no_bias":false,"init":"glorot-uniform"}}]}`; got != want {
		t.Errorf("nn.architecture %s, want %s", got, want)
	}
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
