package training_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
	"github.com/privtrain/privtrain/smoothing"
	"github.com/privtrain/privtrain/training"
)

// resumeCase describes a run that is trained in one go and in two pieces.
type resumeCase struct {
	name     string
	spec     func() nn.Spec
	dtype    nn.DType
	n        int // training examples
	batch    int
	physical int
	rule     func() dpoptim.Rule
	privacy  func() *training.Privacy
	sampling training.Sampling
	epochs   int
	stopAt   int // the first piece stops after this many steps
}

func (rc resumeCase) trainer(t *testing.T, train datasets.Dataset, epochs int, initSeed uint64, onStep func(training.StepProgress) error) *training.Trainer {
	m := newModel(t, rc.spec(), rc.physical, nn.WithSeed(initSeed), nn.WithDType(rc.dtype))
	var priv *training.Privacy
	if rc.privacy != nil {
		priv = rc.privacy()
	}
	return newTrainer(t, m, training.TrainerConfig{
		Data:      training.Data{Train: train, Name: "mnist-subset"},
		Rule:      rc.rule(),
		Privacy:   priv,
		Schedule:  training.Schedule{BatchSize: rc.batch, Epochs: epochs, Sampling: rc.sampling},
		Seed:      seedPtr(11),
		Settings:  map[string]string{"lr": "0.5"},
		Callbacks: training.Callbacks{OnStep: onStep},
	})
}

func resumeCases() []resumeCase {
	flat := func() *training.Privacy {
		return &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1.3, Delta: 1e-5}
	}
	sgd := func() dpoptim.Rule { return dpoptim.NewSGD(dpoptim.Constant(0.5)) }
	return []resumeCase{
		{name: "logreg dp-sgd", spec: models.LogisticRegression, n: 600, batch: 60, physical: 32, rule: sgd, privacy: flat, epochs: 3, stopAt: 20},
		{name: "cnn dp-sgd", spec: func() nn.Spec { return models.MNISTCNN(models.Tanh) }, n: 256, batch: 64, physical: 32, rule: sgd, privacy: flat, epochs: 3, stopAt: 8},
		{name: "logreg dp-lsadam float64", spec: models.LogisticRegression, dtype: nn.Float64, n: 600, batch: 60, physical: 64,
			rule: func() dpoptim.Rule { return dpoptim.NewAdam(dpoptim.Constant(1e-2)) },
			privacy: func() *training.Privacy {
				p := flat()
				p.Smoother = mustLaplacian(models.LogisticRegression())
				return p
			}, epochs: 3, stopAt: 20},
		{name: "logreg dp-sgd mid-epoch shuffle", spec: models.LogisticRegression, n: 600, batch: 60, physical: 32, rule: sgd, privacy: flat, sampling: training.Shuffle, epochs: 3, stopAt: 13},
		{name: "logreg dp-sgd mid-epoch poisson", spec: models.LogisticRegression, n: 600, batch: 60, physical: 32, rule: sgd, privacy: flat, epochs: 3, stopAt: 17},
		{name: "logreg dp-sgd adaptive clipping mid-epoch", spec: models.LogisticRegression, n: 600, batch: 60, physical: 32, rule: sgd,
			privacy: func() *training.Privacy {
				p := flat()
				p.Clip = clipping.Flat{C: 0.1}
				p.Adaptive = &dpoptim.AdaptiveClip{TargetQuantile: 0.5}
				return p
			}, epochs: 3, stopAt: 17},
		{name: "cnn dp-adam adaptive clipping", spec: func() nn.Spec { return models.MNISTCNN(models.Tanh) }, n: 256, batch: 64, physical: 32,
			rule: func() dpoptim.Rule { return dpoptim.NewAdam(dpoptim.Constant(1e-3)) },
			privacy: func() *training.Privacy {
				p := flat()
				p.Adaptive = &dpoptim.AdaptiveClip{TargetQuantile: 0.8, LearningRate: 0.5, CountNoise: 4}
				return p
			}, epochs: 3, stopAt: 8},
		{name: "logreg sgd non-private", spec: models.LogisticRegression, n: 600, batch: 60, physical: 32,
			rule: func() dpoptim.Rule { r := dpoptim.NewSGD(dpoptim.Constant(0.5)); r.Momentum = 0.9; return r }, epochs: 3, stopAt: 20},
	}
}

// TestResumeBitForBit is the "Done when" test of checkpoints: training 2 epochs (or up to
// a step in the middle of an epoch), saving, loading into a fresh trainer and model
// (initialised differently) and finishing equals the uninterrupted run: the parameters bit
// for bit, the optimizer state, and the ledger's ε exactly.
func TestResumeBitForBit(t *testing.T) {
	for _, rc := range resumeCases() {
		t.Run(rc.name, func(t *testing.T) {
			train, _ := embedded(t, rc.n)
			whole := rc.trainer(t, train, rc.epochs, 5, nil)
			run(t, whole)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := rc.trainer(t, train, rc.epochs-1, 5, func(p training.StepProgress) error {
				if p.GlobalStep == rc.stopAt {
					cancel()
				}
				return nil
			})
			if _, err := first.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			if first.Steps() != rc.stopAt && first.Steps() != first.Plan().Steps {
				t.Fatalf("first piece stopped at step %d", first.Steps())
			}
			c, err := first.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "run.ckpt")
			if err := checkpoint.Save(path, c); err != nil {
				t.Fatal(err)
			}
			loaded, err := checkpoint.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			second := rc.trainer(t, train, rc.epochs, 6, nil)
			if err := second.Restore(loaded); err != nil {
				t.Fatal(err)
			}
			run(t, second)

			a, b := params(whole.Model()), params(second.Model())
			if i := firstDiff(a, b); i >= 0 {
				t.Errorf("parameter %d: uninterrupted %v, resumed %v", i, a[i], b[i])
			}
			if sa, sb := whole.Optimizer().State(), second.Optimizer().State(); !sa.Equal(sb) {
				t.Errorf("optimizer states differ")
			}
			ea, _ := whole.Spent()
			eb, _ := second.Spent()
			if ea != eb {
				t.Errorf("ε uninterrupted %+v, resumed %+v", ea, eb)
			}
			if whole.Steps() != second.Steps() {
				t.Errorf("steps %d vs %d", whole.Steps(), second.Steps())
			}
		})
	}
}

func mustLaplacian(spec nn.Spec) dpoptim.Smoother {
	m, err := nn.New(spec, 1)
	if err != nil {
		panic(err)
	}
	return laplacianFor(m)
}

func laplacianFor(m *nn.Model) dpoptim.Smoother {
	var layout []smoothing.Tensor
	for _, p := range m.Layout() {
		layout = append(layout, smoothing.Tensor{Name: p.Name, Shape: p.Shape})
	}
	lap, err := smoothing.NewLaplacian[float64](1, layout)
	if err != nil {
		panic(err)
	}
	return lap
}

func params(m *nn.Model) []float64 {
	p := make([]float64, m.NumParams())
	m.Params(p)
	return p
}

// firstDiff returns the first index where a and b differ in their bits, or −1.
func firstDiff(a, b []float64) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestResumeSecure: a run with crypto/rand noise and sampling resumes (the generators are
// reseeded, not restored) and its ledger continues the same history.
func TestResumeSecure(t *testing.T) {
	train, _ := embedded(t, 300)
	mk := func(epochs int) *training.Trainer {
		return newTrainer(t, newModel(t, models.LogisticRegression(), 32), training.TrainerConfig{
			Data:     training.Data{Train: train},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(1)),
			Schedule: training.Schedule{BatchSize: 30, Epochs: epochs},
			Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5},
		})
	}
	first := mk(1)
	run(t, first)
	c, err := first.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if c.Noise != "secure" || c.Seeded {
		t.Fatalf("noise %q, seeded %v", c.Noise, c.Seeded)
	}
	path := filepath.Join(t.TempDir(), "run.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tensorfile.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Tensors["sampler/state"]; ok {
		t.Error("a secure run's checkpoint holds the sampler's generator state")
	}
	if noise := f.Tensors["optimizer/noise"]; len(noise.Data) > 8*32 {
		t.Errorf("a secure run's checkpoint holds %d bytes of noise state", len(noise.Data)/8)
	}
	loaded, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	second := mk(2)
	if err := second.Restore(loaded); err != nil {
		t.Fatal(err)
	}
	run(t, second)
	if h := second.Ledger().History(); len(h) != 1 || h[0].Steps != 20 || h[0].Z != 1 || h[0].Q != 0.1 {
		t.Errorf("ledger history %+v, want one segment of 20 steps at (0.1, 1)", h)
	}
}

// TestRestoreRefuses: a checkpoint of another run is refused with ErrMismatch, a resumed
// plan beyond the budget with ErrBudget; the trainer is left unchanged.
func TestRestoreRefuses(t *testing.T) {
	train, _ := embedded(t, 400)
	other, _ := embedded(t, 401)
	reversed := seq(400)
	slices.Reverse(reversed)
	otherLabels, err := datasets.Subset(train, reversed) // same examples, other order
	if err != nil {
		t.Fatal(err)
	}
	type config struct {
		spec     nn.Spec
		dtype    nn.DType
		train    datasets.Dataset
		name     string
		rule     dpoptim.Rule
		priv     *training.Privacy
		batch    int
		epochs   int
		sampling training.Sampling
		seed     *uint64
		settings map[string]string
	}
	base := func() config {
		return config{spec: models.LogisticRegression(), train: train, name: "mnist", rule: dpoptim.NewSGD(dpoptim.Constant(1)),
			priv:  &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 2, Delta: 1e-5},
			batch: 40, epochs: 2, seed: seedPtr(1), settings: map[string]string{"lr": "1"}}
	}
	build := func(c config) *training.Trainer {
		return newTrainer(t, newModel(t, c.spec, 32, nn.WithDType(c.dtype)), training.TrainerConfig{
			Data:     training.Data{Train: c.train, Name: c.name},
			Rule:     c.rule,
			Privacy:  c.priv,
			Schedule: training.Schedule{BatchSize: c.batch, Epochs: c.epochs, Sampling: c.sampling},
			Seed:     c.seed,
			Settings: c.settings,
		})
	}
	src := build(base())
	run(t, src)
	ck, err := src.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*config)
		want   error
	}{
		{"model", func(c *config) { c.spec = models.MNISTCNN(models.Tanh) }, training.ErrMismatch},
		{"dtype", func(c *config) { c.dtype = nn.Float64 }, training.ErrMismatch},
		{"data set name", func(c *config) { c.name = "fashion" }, training.ErrMismatch},
		{"data set size", func(c *config) { c.train = other }, training.ErrMismatch},
		{"labels", func(c *config) { c.train = otherLabels }, training.ErrMismatch},
		{"optimizer", func(c *config) { c.rule = dpoptim.NewAdam(dpoptim.Constant(1)) }, training.ErrMismatch},
		{"non-private", func(c *config) { c.priv = nil }, training.ErrMismatch},
		{"clip", func(c *config) { c.priv.Clip = clipping.Flat{C: 2} }, training.ErrMismatch},
		{"per-layer", func(c *config) { c.priv.Clip = clipping.PerLayer{C: []float64{1}} }, training.ErrMismatch},
		{"δ", func(c *config) { c.priv.Delta = 1e-6 }, training.ErrMismatch},
		{"fixed noise", func(c *config) { c.priv.TargetEpsilon, c.priv.NoiseMultiplier = 0, 3 }, training.ErrMismatch},
		{"batch", func(c *config) { c.batch = 50 }, training.ErrMismatch},
		{"sampling", func(c *config) { c.sampling = training.Shuffle }, training.ErrMismatch},
		{"seed", func(c *config) { c.seed = seedPtr(2) }, training.ErrMismatch},
		{"secure", func(c *config) { c.seed = nil }, training.ErrMismatch},
		{"settings", func(c *config) { c.settings = map[string]string{"lr": "2"} }, training.ErrMismatch},
		{"fewer epochs", func(c *config) { c.epochs = 1 }, training.ErrMismatch},
		// z was calibrated for 2 epochs at ε = 2; a third epoch would spend more.
		{"budget", func(c *config) { c.epochs = 3 }, training.ErrBudget},
	} {
		c := base()
		tc.change(&c)
		tr := build(c)
		before := params(tr.Model())
		err := tr.Restore(ck)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
			continue
		}
		if tr.Steps() != 0 || firstDiff(before, params(tr.Model())) >= 0 {
			t.Errorf("%s: refused Restore changed the trainer", tc.name)
		}
	}
	// A larger budget admits the third epoch; the past steps' noise multiplier is kept.
	c := base()
	c.epochs, c.priv.TargetEpsilon = 3, 2.6
	tr := build(c)
	if err := tr.Restore(ck); err != nil {
		t.Fatal(err)
	}
	if tr.Plan().NoiseMultiplier != src.Plan().NoiseMultiplier {
		t.Errorf("resumed with z = %v, checkpoint's z = %v", tr.Plan().NoiseMultiplier, src.Plan().NoiseMultiplier)
	}
	res := run(t, tr)
	if res.Spent.Epsilon > 2.6 || res.Spent.Epsilon != tr.Plan().Spent.Epsilon {
		t.Errorf("spent ε = %v, planned %v, target 2.6", res.Spent.Epsilon, tr.Plan().Spent.Epsilon)
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// savedCheckpoint trains a tiny seeded run and saves it, returning the path.
func savedCheckpoint(t testing.TB, dir string, epochs int) (string, *checkpoint.Training) {
	train, test := embedded(t, 200)
	tr := newTrainer(t, newModel(t, models.LogisticRegression(), 32, nn.WithSeed(1)), training.TrainerConfig{
		Data:     training.Data{Train: train, Test: test, Name: "mnist-200"},
		Rule:     dpoptim.NewAdam(dpoptim.Constant(1e-2)),
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 2, Delta: 1e-5},
		Schedule: training.Schedule{BatchSize: 50, Epochs: epochs},
		Seed:     seedPtr(3),
		Settings: map[string]string{"lr": "0.01"},
	})
	run(t, tr)
	c, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "run.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	return path, c
}

func TestCheckpointRoundTrip(t *testing.T) {
	path, c := savedCheckpoint(t, t.TempDir(), 2)
	got, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "logreg" || got.DType != tensorfile.Float32 || got.Step != 8 || got.Epoch != 2 ||
		got.Optimizer != "DP-Adam" || got.Noise != "seeded(3)" || !got.Seeded || got.Seed != 3 {
		t.Errorf("loaded %s %v step %d epoch %d %s noise %s seed %v/%d", got.Model, got.DType, got.Step, got.Epoch, got.Optimizer, got.Noise, got.Seeded, got.Seed)
	}
	if firstDiff(got.Params, c.Params) >= 0 || !layoutEq(got.Layout, c.Layout) {
		t.Error("parameters or layout differ after Save and Load")
	}
	if !got.OptimizerState.Equal(c.OptimizerState) {
		t.Error("optimizer state differs after Save and Load")
	}
	if !maps.Equal(got.Settings, c.Settings) || !got.Dataset.Equal(c.Dataset) {
		t.Errorf("settings %v / dataset %v, saved %v / %v", got.Settings, got.Dataset, c.Settings, c.Dataset)
	}
	e1, _ := got.Spent()
	e2, _ := c.Spent()
	if e1 != e2 || e1.Epsilon > 2 {
		t.Errorf("ε after Load %+v, before %+v", e1, e2)
	}
	wantPlan := c.Plan
	wantPlan.Spent = got.Plan.Spent // derived, not stored
	if got.Plan != wantPlan {
		t.Errorf("plan after Load %+v, saved %+v", got.Plan, c.Plan)
	}
	// Parameters are stored with their real shapes and names, in the model's dtype.
	f, err := tensorfile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w := f.Tensors["params/dense1.weight"]
	if w.DType != tensorfile.Float32 || !slices.Equal(w.Shape, []int{784, 10}) {
		t.Errorf("params/dense1.weight: %v %v, want F32 [784 10]", w.DType, w.Shape)
	}
	if _, ok := f.Metadata["nn.ledger"]; !ok {
		t.Error("no ledger in the checkpoint")
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("checkpoint mode %v (%v), want 0600: a seeded checkpoint reveals the noise", info.Mode().Perm(), err)
	}
}

func layoutEq(a, b []nn.ParamInfo) bool {
	return slices.EqualFunc(a, b, func(x, y nn.ParamInfo) bool { return x.Name == y.Name && slices.Equal(x.Shape, y.Shape) })
}

// TestLoadBadFiles: damaged, truncated, foreign and missing files give clear errors.
func TestLoadBadFiles(t *testing.T) {
	dir := t.TempDir()
	path, _ := savedCheckpoint(t, dir, 1)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := slices.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	foreign := filepath.Join(dir, "foreign.ckpt")
	if err := tensorfile.WriteFile(foreign, &tensorfile.File{
		Tensors:  map[string]tensorfile.Tensor{"w": tensorfile.F64([]int{2}, []float64{1, 2})},
		Metadata: map[string]string{"framework": "other"},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		want error
		msg  string
	}{
		{"truncated", write("truncated.ckpt", good[:len(good)/2]), checkpoint.ErrCorrupt, "truncated"},
		{"one byte", write("one.ckpt", good[:1]), checkpoint.ErrCorrupt, "truncated"},
		{"flipped bit", write("flipped.ckpt", flipped), checkpoint.ErrCorrupt, ""},
		{"empty", write("empty.ckpt", nil), checkpoint.ErrCorrupt, "truncated"},
		{"text", write("text.ckpt", []byte("epoch 3, step 96\n")), checkpoint.ErrNotCheckpoint, ""},
		{"foreign", foreign, checkpoint.ErrInvalid, "not a training checkpoint"},
		{"missing", filepath.Join(dir, "missing.ckpt"), fs.ErrNotExist, ""},
	} {
		_, err := checkpoint.Load(tc.path)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), filepath.Base(tc.path)) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %q should name the file and say %q", tc.name, err, tc.msg)
		}
	}
}

// TestLoadInconsistent edits a valid checkpoint's content (re-encoded with valid
// checksums) so that its parts contradict each other; Load must refuse each.
func TestLoadInconsistent(t *testing.T) {
	dir := t.TempDir()
	path, _ := savedCheckpoint(t, dir, 1)
	for _, tc := range []struct {
		name string
		edit func(f *tensorfile.File)
	}{
		{"no kind", func(f *tensorfile.File) { delete(f.Metadata, "nn.kind") }},
		{"future kind", func(f *tensorfile.File) { f.Metadata["nn.kind"] = "privtrain-training/9" }},
		{"unknown key", func(f *tensorfile.File) { f.Metadata["nn.extra"] = "1" }},
		{"no ledger", func(f *tensorfile.File) { delete(f.Metadata, "nn.ledger") }},
		{"ledger garbage", func(f *tensorfile.File) { f.Metadata["nn.ledger"] = "{" }},
		{"ledger steps", func(f *tensorfile.File) {
			f.Metadata["nn.position"] = strings.Replace(f.Metadata["nn.position"], `"step":4`, `"step":3`, 1)
		}},
		{"run id", func(f *tensorfile.File) {
			f.Metadata["nn.position"] = strings.Replace(f.Metadata["nn.position"], `"run_id":"`, `"run_id":"x`, 1)
		}},
		{"rewind without its steps in the ledger", func(f *tensorfile.File) {
			f.Metadata["nn.position"] = strings.Replace(f.Metadata["nn.position"], `"step":4`, `"step":4,"rewinds":[[4,2]]`, 1)
		}},
		{"rewind beyond the plan", func(f *tensorfile.File) {
			f.Metadata["nn.position"] = strings.Replace(f.Metadata["nn.position"], `"step":4`, `"step":4,"rewinds":[[99,0]]`, 1)
		}},
		{"step beyond plan", func(f *tensorfile.File) {
			f.Metadata["nn.position"] = strings.Replace(f.Metadata["nn.position"], `"step":4`, `"step":99`, 1)
		}},
		{"plan q", func(f *tensorfile.File) {
			f.Metadata["nn.plan"] = strings.Replace(f.Metadata["nn.plan"], `"q":0.25`, `"q":0.5`, 1)
		}},
		{"plan JSON field", func(f *tensorfile.File) {
			f.Metadata["nn.plan"] = strings.Replace(f.Metadata["nn.plan"], `{`, `{"extra":1,`, 1)
		}},
		{"trailing JSON", func(f *tensorfile.File) { f.Metadata["nn.settings"] += "{}" }},
		{"dtype", func(f *tensorfile.File) { f.Metadata["nn.dtype"] = "float64" }},
		{"noise kind", func(f *tensorfile.File) { f.Metadata["nn.noise"] = "secure" }},
		{"seed", func(f *tensorfile.File) { f.Metadata["nn.seed"] = "x" }},
		{"missing parameter", func(f *tensorfile.File) { delete(f.Tensors, "params/dense1.bias") }},
		{"extra parameter", func(f *tensorfile.File) { f.Tensors["params/extra"] = tensorfile.F32([]int{1}, []float32{1}) }},
		{"unknown tensor", func(f *tensorfile.File) { f.Tensors["other"] = tensorfile.F32([]int{1}, []float32{1}) }},
		{"parameter shape", func(f *tensorfile.File) {
			f.Tensors["params/dense1.bias"] = tensorfile.F32([]int{2, 5}, make([]float32, 10))
		}},
		{"NaN parameter", func(f *tensorfile.File) {
			f.Tensors["params/dense1.bias"] = tensorfile.F32([]int{10}, []float32{float32(math.NaN()), 0, 0, 0, 0, 0, 0, 0, 0, 0})
		}},
		{"NaN optimizer state", func(f *tensorfile.File) {
			f.Tensors["optimizer/rule/m"] = tensorfile.F64([]int{1}, []float64{math.NaN()})
		}},
		{"optimizer step", func(f *tensorfile.File) { f.Tensors["optimizer/step"] = tensorfile.F64([]int{1}, []float64{3}) }},
		{"optimizer state dtype", func(f *tensorfile.File) { f.Tensors["optimizer/step"] = tensorfile.I64([]int{1}, []int64{4}) }},
		// Cases that dpoptim.State's types rule out, refused where the floats are decoded.
		{"optimizer step fraction", func(f *tensorfile.File) { f.Tensors["optimizer/step"] = tensorfile.F64([]int{1}, []float64{3.5}) }},
		{"optimizer step NaN", func(f *tensorfile.File) {
			f.Tensors["optimizer/step"] = tensorfile.F64([]int{1}, []float64{math.NaN()})
		}},
		{"optimizer step negative", func(f *tensorfile.File) { f.Tensors["optimizer/step"] = tensorfile.F64([]int{1}, []float64{-4}) }},
		{"optimizer step two values", func(f *tensorfile.File) { f.Tensors["optimizer/step"] = tensorfile.F64([]int{2}, []float64{4, 4}) }},
		{"optimizer step missing", func(f *tensorfile.File) { delete(f.Tensors, "optimizer/step") }},
		{"rule step missing", func(f *tensorfile.File) { delete(f.Tensors, "optimizer/rule/step") }},
		{"noise missing", func(f *tensorfile.File) { delete(f.Tensors, "optimizer/noise") }},
		{"noise float > 255", func(f *tensorfile.File) { f.Tensors["optimizer/noise"] = tensorfile.F64([]int{2}, []float64{100, 300}) }},
		{"noise float fraction", func(f *tensorfile.File) { f.Tensors["optimizer/noise"] = tensorfile.F64([]int{2}, []float64{100, 1.5}) }},
		{"noise corrupt", func(f *tensorfile.File) { f.Tensors["optimizer/noise"] = tensorfile.U8([]int{3}, []byte{1, 2, 3}) }},
		{"rule state nested twice", func(f *tensorfile.File) {
			f.Tensors["optimizer/rule/rule/step"] = tensorfile.F64([]int{1}, []float64{4})
		}},
		{"private optimizer without its rule", func(f *tensorfile.File) {
			for name := range f.Tensors {
				if strings.HasPrefix(name, "optimizer/rule/") {
					delete(f.Tensors, name)
				}
			}
		}},
		{"optimizer matrix", func(f *tensorfile.File) { f.Tensors["optimizer/rule/m"] = tensorfile.F64([]int{1, 1}, []float64{0}) }},
		{"sampler kind", func(f *tensorfile.File) { f.Metadata["nn.sampler"] = "secure" }},
		{"dataset size", func(f *tensorfile.File) {
			f.Metadata["nn.dataset"] = strings.Replace(f.Metadata["nn.dataset"], `"size":200`, `"size":201`, 1)
		}},
		{"layout", func(f *tensorfile.File) { f.Metadata["nn.layout"] = `[{"name":"dense1.weight","shape":[784,-10]}]` }},
	} {
		f, err := tensorfile.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tc.edit(f)
		bad := filepath.Join(dir, "bad.ckpt")
		if err := tensorfile.WriteFile(bad, f); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if _, err := checkpoint.Load(bad); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrCheckpoint", tc.name, err)
		}
	}
}

// TestSaveInterrupted: a crash between writing the new checkpoint and renaming it over the
// old one (simulated by a panic in atomicfile's test hook) leaves the previous checkpoint
// in place and loadable.
func TestSaveInterrupted(t *testing.T) {
	dir := t.TempDir()
	path, first := savedCheckpoint(t, dir, 1)
	_, second := savedCheckpoint(t, t.TempDir(), 2)
	crashed := errors.New("crash")
	atomicfile.BeforeRename = func(string) { panic(crashed) }
	func() {
		defer func() {
			if r := recover(); r != crashed {
				t.Fatalf("recovered %v", r)
			}
		}()
		_ = checkpoint.Save(path, second)
	}()
	atomicfile.BeforeRename = nil
	got, err := checkpoint.Load(path)
	if err != nil {
		t.Fatalf("previous checkpoint after an interrupted save: %v", err)
	}
	if got.Step != first.Step || firstDiff(got.Params, first.Params) >= 0 {
		t.Errorf("loaded step %d, want the previous checkpoint's step %d", got.Step, first.Step)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".run.ckpt.tmp-*"))
	if len(leftovers) != 1 {
		t.Errorf("temporary files %v, want the crashed one", leftovers)
	}
	if err := checkpoint.Save(path, second); err != nil {
		t.Fatal(err)
	}
	if got, err := checkpoint.Load(path); err != nil || got.Step != second.Step {
		t.Errorf("after a good save: step %v, err %v", got, err)
	}
	// The crashed save's temporary file is no longer being written: the good save removed it.
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".run.ckpt.tmp-*")); len(leftovers) != 0 {
		t.Errorf("temporary files %v after a good save, want none", leftovers)
	}
}
