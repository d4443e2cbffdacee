package training_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"math"
	"path/filepath"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
	"github.com/privtrain/privtrain/training"
)

// emaTrainer is DP-SGD on logistic regression over n embedded digits (batch 60, 10 steps
// an epoch for n = 600) with parameter averaging of decay ema.
func emaTrainer(t *testing.T, train, test datasets.Dataset, ema float64, epochs int, initSeed uint64, dtype nn.DType, onStep func(training.StepProgress) error) *training.Trainer {
	t.Helper()
	m := newModel(t, models.LogisticRegression(), 32, nn.WithSeed(initSeed), nn.WithDType(dtype))
	return newTrainer(t, m, training.TrainerConfig{
		Data:      training.Data{Train: train, Test: test, Name: "mnist-subset"},
		Rule:      dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Privacy:   &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1.3, Delta: 1e-5},
		Schedule:  training.Schedule{BatchSize: 60, Epochs: epochs},
		Seed:      seedPtr(11),
		Averaging: training.Averaging{EMA: ema},
		Callbacks: training.Callbacks{OnStep: onStep},
	})
}

// The trainer's average equals the average recomputed by brute force from the parameters
// the model held before the run and after every step, with the weights written out:
// θ̄_T = (Π_{s≤T} β_s)·θ₀ + Σ_t (1−β_t)·Π_{s>t} β_s·θ_t, β_s = min(β, s/(9+s)).
func TestEMAMatchesBruteForce(t *testing.T) {
	for _, dtype := range []nn.DType{nn.Float32, nn.Float64} {
		t.Run(dtype.String(), func(t *testing.T) {
			train, _ := embedded(t, 600)
			const beta = 0.8
			var thetas [][]float64
			var tr *training.Trainer
			tr = emaTrainer(t, train, nil, beta, 2, 3, dtype, func(training.StepProgress) error {
				thetas = append(thetas, params(tr.Model()))
				return nil
			})
			thetas = append(thetas, params(tr.Model()))
			if ok, _ := tr.AveragedParams(make([]float64, tr.Model().NumParams())); ok {
				t.Error("an average before Run")
			}
			run(t, tr)
			T := len(thetas) - 1
			if T != 20 {
				t.Fatalf("%d steps recorded, want 20", T)
			}
			w := func(s int) float64 { return math.Min(beta, float64(s)/float64(9+s)) }
			want := make([]float64, len(thetas[0]))
			for k := 0; k <= T; k++ {
				c := 1.0
				if k > 0 {
					c = 1 - w(k)
				}
				for s := k + 1; s <= T; s++ {
					c *= w(s)
				}
				for i := range want {
					want[i] += c * thetas[k][i]
				}
			}
			got := make([]float64, len(want))
			if ok, err := tr.AveragedParams(got); !ok || err != nil {
				t.Fatalf("AveragedParams: %v, %v", ok, err)
			}
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
					t.Fatalf("average[%d] = %v, brute force %v", i, got[i], want[i])
				}
			}
			// The model holds the raw parameters, which differ from the average.
			raw := params(tr.Model())
			if firstDiff(raw, thetas[T]) >= 0 {
				t.Error("the model does not hold the last raw iterate")
			}
			if firstDiff(raw, got) < 0 {
				t.Error("raw and averaged parameters are equal; the test shows nothing")
			}
		})
	}
}

// The evaluations (epoch ends, Result, Evaluate) use the averaged parameters, and leave
// the raw ones in the model: a second trainer without averaging evaluates the average
// and the raw parameters loaded into its model, and the two losses differ.
func TestEMAEvaluatesAverage(t *testing.T) {
	train, test := embedded(t, 600)
	tr := emaTrainer(t, train, test, 0.9, 2, 3, nn.Float32, nil)
	res := run(t, tr)
	avg := make([]float64, tr.Model().NumParams())
	if ok, err := tr.AveragedParams(avg); !ok || err != nil {
		t.Fatal(ok, err)
	}
	raw := params(tr.Model())

	ref := newTrainer(t, newModel(t, models.LogisticRegression(), 32), training.TrainerConfig{
		Data:     training.Data{Train: train, Name: "ref"},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(1)),
		Schedule: training.Schedule{BatchSize: 60, Epochs: 1},
	})
	evalWith := func(p []float64) (float64, float64) {
		if err := ref.Model().SetParams(p); err != nil {
			t.Fatal(err)
		}
		l, a, err := ref.Evaluate(test)
		if err != nil {
			t.Fatal(err)
		}
		return l, a
	}
	avgLoss, avgAcc := evalWith(avg)
	rawLoss, _ := evalWith(raw)
	if avgLoss == rawLoss {
		t.Fatalf("raw and averaged parameters have the same test loss %v; the test shows nothing", avgLoss)
	}
	if res.TestLoss != avgLoss || res.TestAccuracy != avgAcc {
		t.Errorf("Result test loss %v, accuracy %v; the average gives %v, %v (raw: loss %v)", res.TestLoss, res.TestAccuracy, avgLoss, avgAcc, rawLoss)
	}
	l, a, err := tr.Evaluate(test)
	if err != nil || l != avgLoss || a != avgAcc {
		t.Errorf("Evaluate: %v, %v, %v; want the average's %v, %v", l, a, err, avgLoss, avgAcc)
	}
	if i := firstDiff(params(tr.Model()), raw); i >= 0 {
		t.Errorf("Evaluate left parameter %d changed", i)
	}
}

// A run interrupted mid-epoch, saved, loaded into a fresh trainer (initialised
// differently) and finished has the uninterrupted run's average bit for bit, and its
// last evaluation.
func TestEMAResumeBitForBit(t *testing.T) {
	for _, dtype := range []nn.DType{nn.Float32, nn.Float64} {
		t.Run(dtype.String(), func(t *testing.T) {
			train, test := embedded(t, 600)
			whole := emaTrainer(t, train, test, 0.9, 3, 5, dtype, nil)
			wres := run(t, whole)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := emaTrainer(t, train, test, 0.9, 3, 5, dtype, func(p training.StepProgress) error {
				if p.GlobalStep == 13 {
					cancel()
				}
				return nil
			})
			if _, err := first.Run(ctx); !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			c, err := first.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			if c.EMA != 0.9 || c.EMASteps != 13 || len(c.EMAParams) != first.Model().NumParams() {
				t.Fatalf("checkpoint EMA %v, %d steps, %d values", c.EMA, c.EMASteps, len(c.EMAParams))
			}
			path := filepath.Join(t.TempDir(), "run.ckpt")
			if err := checkpoint.Save(path, c); err != nil {
				t.Fatal(err)
			}
			loaded, err := checkpoint.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if i := firstDiff(loaded.EMAParams, c.EMAParams); i >= 0 || loaded.EMASteps != 13 || loaded.EMA != 0.9 {
				t.Fatalf("average changed by Save and Load (index %d, %d steps, decay %v)", i, loaded.EMASteps, loaded.EMA)
			}
			second := emaTrainer(t, train, test, 0.9, 3, 6, dtype, nil)
			if err := second.Restore(loaded); err != nil {
				t.Fatal(err)
			}
			sres := run(t, second)
			a, b := make([]float64, len(c.EMAParams)), make([]float64, len(c.EMAParams))
			_, _ = whole.AveragedParams(a)
			_, _ = second.AveragedParams(b)
			if i := firstDiff(a, b); i >= 0 {
				t.Errorf("average %d: uninterrupted %v, resumed %v", i, a[i], b[i])
			}
			if i := firstDiff(params(whole.Model()), params(second.Model())); i >= 0 {
				t.Errorf("raw parameter %d differs", i)
			}
			if wres.TestLoss != sres.TestLoss || wres.TestAccuracy != sres.TestAccuracy {
				t.Errorf("final evaluation: uninterrupted %v / %v, resumed %v / %v", wres.TestLoss, wres.TestAccuracy, sres.TestLoss, sres.TestAccuracy)
			}
		})
	}
}

// Models built from a checkpoint with an average hold the average; without it (or with
// EMAParams cleared) the raw parameters.
func TestModelFromCheckpointUsesAverage(t *testing.T) {
	train, _ := embedded(t, 600)
	tr := emaTrainer(t, train, nil, 0.9, 1, 3, nn.Float64, nil)
	run(t, tr)
	c, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ema.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	m, err := nn.LoadModel(path, 8)
	if err != nil {
		t.Fatal(err)
	}
	avg := make([]float64, m.NumParams())
	_, _ = tr.AveragedParams(avg)
	if i := firstDiff(params(m), avg); i >= 0 {
		t.Errorf("LoadModel parameter %d = %v, the average %v", i, params(m)[i], avg[i])
	}
	if firstDiff(avg, c.Params) < 0 {
		t.Fatal("average equals the raw parameters; the test shows nothing")
	}
	c.EMAParams = nil
	raw, err := nn.ModelFromCheckpoint(c, 8)
	if err != nil {
		t.Fatal(err)
	}
	if i := firstDiff(params(raw), c.Params); i >= 0 {
		t.Errorf("without EMAParams: parameter %d = %v, raw %v", i, params(raw)[i], c.Params[i])
	}
}

// Restore refuses a checkpoint whose averaging differs from the run's, and NewTrainer a
// decay outside (0, 1).
func TestEMAMismatchAndConfig(t *testing.T) {
	train, _ := embedded(t, 600)
	with := emaTrainer(t, train, nil, 0.9, 1, 3, nn.Float32, nil)
	run(t, with)
	cWith, _ := with.Checkpoint()
	without := emaTrainer(t, train, nil, 0, 1, 3, nn.Float32, nil)
	run(t, without)
	cWithout, _ := without.Checkpoint()
	if cWithout.EMA != 0 || cWithout.EMAParams != nil {
		t.Errorf("checkpoint without averaging holds EMA %v, %d values", cWithout.EMA, len(cWithout.EMAParams))
	}
	for _, c := range []struct {
		name string
		ema  float64
		ck   *checkpoint.Training
	}{{"averaged into none", 0, cWith}, {"averaged into another decay", 0.99, cWith}, {"none into averaged", 0.9, cWithout}} {
		tr := emaTrainer(t, train, nil, c.ema, 2, 3, nn.Float32, nil)
		if err := tr.Restore(c.ck); !errors.Is(err, training.ErrMismatch) {
			t.Errorf("%s: err = %v, want ErrMismatch", c.name, err)
		}
	}
	for _, decay := range []float64{-0.5, 1, 2, math.NaN(), math.Inf(1)} {
		m := newModel(t, models.LogisticRegression(), 32)
		_, err := training.NewTrainer(m, training.TrainerConfig{Data: training.Data{Train: train}, Rule: dpoptim.NewSGD(dpoptim.Constant(1)), Schedule: training.Schedule{BatchSize: 60, Epochs: 1}, Averaging: training.Averaging{EMA: decay}})
		if !errors.Is(err, training.ErrConfig) {
			t.Errorf("EMA %v: err = %v, want ErrConfig", decay, err)
		}
	}
}

// Damaged or inconsistent ema/ tensors are refused with ErrCheckpoint; a file without
// them is a run without averaging.
func TestEMACheckpointTensors(t *testing.T) {
	train, _ := embedded(t, 600)
	tr := emaTrainer(t, train, nil, 0.9, 1, 3, nn.Float32, nil)
	run(t, tr)
	c, _ := tr.Checkpoint()
	dir := t.TempDir()
	path := filepath.Join(dir, "ema.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	d := len(c.EMAParams)
	for name, edit := range map[string]func(f *tensorfile.File){
		"no decay":       func(f *tensorfile.File) { delete(f.Tensors, "ema/decay") },
		"decay 1":        func(f *tensorfile.File) { f.Tensors["ema/decay"] = tensorfile.F64(nil, []float64{1}) },
		"decay vector":   func(f *tensorfile.File) { f.Tensors["ema/decay"] = tensorfile.F64([]int{1}, []float64{0.9}) },
		"no step":        func(f *tensorfile.File) { delete(f.Tensors, "ema/step") },
		"other step":     func(f *tensorfile.File) { f.Tensors["ema/step"] = tensorfile.F64([]int{1}, []float64{3}) },
		"fractional":     func(f *tensorfile.File) { f.Tensors["ema/step"] = tensorfile.F64([]int{1}, []float64{9.5}) },
		"no values":      func(f *tensorfile.File) { delete(f.Tensors, "ema/params") },
		"short values":   func(f *tensorfile.File) { f.Tensors["ema/params"] = tensorfile.F64([]int{d - 1}, make([]float64, d-1)) },
		"float32 values": func(f *tensorfile.File) { f.Tensors["ema/params"] = tensorfile.F32([]int{d}, make([]float32, d)) },
		"NaN value": func(f *tensorfile.File) {
			v := make([]float64, d)
			v[3] = math.NaN()
			f.Tensors["ema/params"] = tensorfile.F64([]int{d}, v)
		},
		"unknown tensor": func(f *tensorfile.File) { f.Tensors["ema/other"] = tensorfile.F64([]int{1}, []float64{1}) },
	} {
		f, err := tensorfile.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		edit(f)
		bad := filepath.Join(dir, "bad.ckpt")
		if err := tensorfile.WriteFile(bad, f); err != nil {
			t.Fatal(err)
		}
		if _, err := checkpoint.Load(bad); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrCheckpoint", name, err)
		}
	}
	// All three removed: a checkpoint of a run without averaging, which this run refuses.
	f, _ := tensorfile.ReadFile(path)
	for _, k := range []string{"ema/decay", "ema/step", "ema/params"} {
		delete(f.Tensors, k)
	}
	plain := filepath.Join(dir, "plain.ckpt")
	if err := tensorfile.WriteFile(plain, f); err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.Load(plain)
	if err != nil || got.EMA != 0 || got.EMAParams != nil {
		t.Fatalf("without ema/ tensors: %v, EMA %v", err, got.EMA)
	}
	if err := emaTrainer(t, train, nil, 0.9, 1, 3, nn.Float32, nil).Restore(got); !errors.Is(err, training.ErrMismatch) {
		t.Errorf("restoring a checkpoint without averaging: %v, want ErrMismatch", err)
	}
}

// FuzzEMATensors replaces the ema/ tensors of a valid checkpoint with fuzzed values and
// re-encodes it: Decode must refuse or accept without panicking, and what it accepts
// must save and load again with the same average.
func FuzzEMATensors(f *testing.F) {
	train, _ := embedded(f, 100)
	m := newModel(f, models.LogisticRegression(), 16, nn.WithSeed(1))
	tr := newTrainer(f, m, training.TrainerConfig{
		Data:      training.Data{Train: train, Name: "tiny"},
		Rule:      dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Schedule:  training.Schedule{BatchSize: 50, Epochs: 1},
		Seed:      seedPtr(1),
		Averaging: training.Averaging{EMA: 0.9},
	})
	run(f, tr)
	c, err := tr.Checkpoint()
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(f.TempDir(), "ema.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		f.Fatal(err)
	}
	base, err := tensorfile.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	d := len(c.EMAParams)
	steps := float64(c.Step)
	f.Add(0.9, steps, d, 0.0, uint8(3)) // the checkpoint as saved
	f.Add(0.9, steps, d, math.NaN(), uint8(3))
	f.Add(1.0, steps, d, 0.0, uint8(3))
	f.Add(0.5, -1.0, d, 0.0, uint8(3))
	f.Add(0.9, steps+0.5, d-1, 0.0, uint8(3))
	f.Add(0.9, 0.0, 0, 0.0, uint8(2))
	f.Add(0.9, steps, d, math.Inf(1), uint8(3))
	f.Add(0.9, steps, d, 0.0, uint8(0))
	f.Add(0.9, steps, d, 0.0, uint8(1))
	f.Fuzz(func(t *testing.T, decay, step float64, n int, value float64, drop uint8) {
		if n < 0 || n > 2*d {
			return
		}
		file := &tensorfile.File{Tensors: maps.Clone(base.Tensors), Metadata: base.Metadata}
		v := make([]float64, n)
		for i := range v {
			v[i] = c.EMAParams[i%d] + value*float64(i%2)
		}
		file.Tensors["ema/decay"] = tensorfile.F64(nil, []float64{decay})
		file.Tensors["ema/step"] = tensorfile.F64([]int{1}, []float64{step})
		file.Tensors["ema/params"] = tensorfile.F64([]int{n}, v)
		if drop < 3 { // drop one of the tensors
			delete(file.Tensors, []string{"ema/decay", "ema/step", "ema/params"}[drop])
		}
		var buf bytes.Buffer
		if err := tensorfile.Encode(&buf, file); err != nil {
			return
		}
		got, err := checkpoint.DecodeTraining(&buf, tensorfile.WithMaxSize(1<<20))
		if err != nil {
			return
		}
		if got.EMASteps != got.Step || len(got.EMAParams) != len(got.Params) || !(got.EMA > 0 && got.EMA < 1) {
			t.Fatalf("accepted an inconsistent average: decay %v, %d steps at step %d, %d values", got.EMA, got.EMASteps, got.Step, len(got.EMAParams))
		}
		p := filepath.Join(t.TempDir(), "again.ckpt")
		if err := checkpoint.Save(p, got); err != nil {
			t.Fatal(err)
		}
		again, err := checkpoint.Load(p)
		if err != nil || again.EMA != got.EMA || firstDiff(again.EMAParams, got.EMAParams) >= 0 {
			t.Fatalf("average changed in a round trip: %v", err)
		}
	})
}

// A rewind (Restore of an earlier state with AllowRewind) takes the earlier state's
// average; a seeded run finished from there retraces its steps and ends with the same
// average, bit for bit.
func TestEMARewind(t *testing.T) {
	train, _ := embedded(t, 600)
	var early *checkpoint.Training
	var tr *training.Trainer
	tr = emaTrainer(t, train, nil, 0.9, 3, 4, nn.Float32, func(p training.StepProgress) error {
		if p.GlobalStep == 12 {
			var err error
			early, err = tr.Checkpoint()
			return err
		}
		return nil
	})
	run(t, tr)
	d := tr.Model().NumParams()
	whole := make([]float64, d)
	_, _ = tr.AveragedParams(whole)
	if err := tr.Restore(early, training.AllowRewind()); err != nil {
		t.Fatal(err)
	}
	got := make([]float64, d)
	_, _ = tr.AveragedParams(got)
	if i := firstDiff(got, early.EMAParams); i >= 0 || tr.Steps() != 12 {
		t.Fatalf("after the rewind: average differs at %d from the checkpoint's, step %d", i, tr.Steps())
	}
	run(t, tr)
	_, _ = tr.AveragedParams(got)
	if i := firstDiff(got, whole); i >= 0 {
		t.Errorf("average %d: first pass %v, after the rewind %v", i, whole[i], got[i])
	}
}
