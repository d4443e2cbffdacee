package traincmd

import (
	"context"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/smoothing"
	"github.com/privtrain/privtrain/training"
)

// -ls-axis input (the default) smooths with the model's SmoothingAxes, -ls-axis flat in
// storage order; on logreg, whose weight is [784, 10], the two differ.
func TestLSAxisSmoother(t *testing.T) {
	smoothed := func(args ...string) []float64 {
		t.Helper()
		o := parseOptions(t, append([]string{"-model", "logreg"}, args...)...)
		if err := o.validate(); err != nil {
			t.Fatal(err)
		}
		m, err := buildModel(o, builtinShape["mnist"], 10, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		p, err := buildPrivacy(o, m)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float64, m.NumParams())
		rng := rand.New(rand.NewPCG(5, 6))
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		if err := p.Smoother.Smooth(v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	reference := func(axes ...smoothing.Axis) []float64 {
		t.Helper()
		layout := []smoothing.Tensor{{Name: "dense1.weight", Shape: []int{784, 10}}, {Name: "dense1.bias", Shape: []int{10}}}
		lap, err := smoothing.NewLaplacian[float64](2, layout, smoothing.Axes(axes...))
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float64, 7850)
		rng := rand.New(rand.NewPCG(5, 6))
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		if err := lap.Smooth(v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	input := reference(smoothing.Along(0), smoothing.Flat())
	flat := reference(smoothing.Flat(), smoothing.Flat())
	if slices.Equal(input, flat) {
		t.Fatal("along the inputs and flat smooth logreg's weight the same way")
	}
	for _, c := range []struct {
		args []string
		want []float64
	}{
		{[]string{"-optimizer", "dp-lssgd", "-ls-sigma", "2"}, input},
		{[]string{"-optimizer", "dp-lssgd", "-ls-sigma", "2", "-ls-axis", "input"}, input},
		{[]string{"-optimizer", "dp-lsadam", "-ls-sigma", "2", "-ls-axis", "flat"}, flat},
	} {
		if got := smoothed(c.args...); !slices.Equal(got, c.want) {
			t.Errorf("%v: smoothing differs from the reference", c.args)
		}
	}
}

func TestLSAxisBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"-optimizer", "dp-lssgd", "-ls-axis", "pixels"},
		{"-optimizer", "dp-lssgd", "-ls-axis", ""},
		{"-optimizer", "dp-sgd", "-ls-axis", "flat"},
	} {
		o := parseOptions(t, append([]string{"-model", "logreg"}, args...)...)
		if err := o.validate(); err == nil || !strings.Contains(err.Error(), "-ls-axis") {
			t.Errorf("%v: error %v, want one naming -ls-axis", args, err)
		}
	}
}

// A checkpoint written before -ls-axis (its settings do not name it) smoothed every
// tensor in storage order: it resumes with -ls-axis flat and settings that still match
// its own; -ls-axis input is refused.
func TestLSAxisLegacyCheckpoint(t *testing.T) {
	legacy := map[string]string{"optimizer": "dp-lssgd", "model": "logreg", "ls-sigma": "1", "momentum": "0", "lr": "4"}
	resume := func(args ...string) (*options, error) {
		o := &options{resume: "old.ckpt"}
		fs := newFlagSet(o)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		o.set = map[string]bool{}
		for _, a := range args {
			if name, ok := strings.CutPrefix(a, "-"); ok {
				o.set[name] = true
			}
		}
		if err := o.applyCheckpoint(&checkpoint.Training{Settings: legacy, Plan: training.Plan{Epochs: 1, PhysicalBatch: 128}}, fs); err != nil {
			return nil, err
		}
		o.resolve()
		return o, o.validate()
	}
	for _, args := range [][]string{nil, {"-ls-axis", "flat"}} {
		o, err := resume(args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if o.lsAxis != "flat" {
			t.Errorf("%v: -ls-axis %q, want flat", args, o.lsAxis)
		}
		if _, ok := o.settings()["ls-axis"]; ok {
			t.Errorf("%v: settings name -ls-axis, the checkpoint's do not", args)
		}
	}
	if _, err := resume("-ls-axis", "input"); err == nil || !strings.Contains(err.Error(), "-ls-axis input") || !strings.Contains(err.Error(), "before -ls-axis") {
		t.Errorf("-ls-axis input on an old checkpoint: %v", err)
	}
	// A checkpoint that names the axis keeps it.
	legacy["ls-axis"] = "input"
	o, err := resume()
	if err != nil || o.lsAxis != "input" || o.settings()["ls-axis"] != "input" {
		t.Errorf("checkpoint with -ls-axis input: %v, %q", err, o.lsAxis)
	}
}

// End to end: the axis is recorded in the checkpoint and a resume that changes it is
// refused; a checkpoint without the setting (written before it) resumes flat.
func TestLSAxisResume(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	dir := t.TempDir()
	c := filepath.Join(dir, "c.ckpt")
	mustRun(t, "-model", "logreg", "-optimizer", "dp-lssgd", "-seed", "3", "-noise", "2", "-epochs", "1", "-batch", "2000", "-checkpoint", c)
	ck, err := checkpoint.Load(c)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Settings["ls-axis"] != "input" {
		t.Fatalf("checkpoint settings %v: want ls-axis input", ck.Settings)
	}
	code, _, stderr := runCmd(t, context.Background(), "-resume", c, "-ls-axis", "flat", "-epochs", "2")
	if code != exit.Usage || !strings.Contains(stderr, "ls-axis") {
		t.Errorf("resuming with another -ls-axis: exit %d, %q", code, stderr)
	}
	mustRun(t, "-resume", c, "-epochs", "2", "-checkpoint", c)

	// The same run as a checkpoint from before -ls-axis.
	old := filepath.Join(dir, "old.ckpt")
	mustRun(t, "-model", "logreg", "-optimizer", "dp-lssgd", "-seed", "3", "-noise", "2", "-epochs", "1", "-batch", "2000", "-ls-axis", "flat", "-checkpoint", old)
	clitest.Rewrite(t, old, old, func(c *checkpoint.Training) { delete(c.Settings, "ls-axis") })
	code, _, stderr = runCmd(t, context.Background(), "-resume", old, "-ls-axis", "input", "-epochs", "2")
	if code != exit.Usage || !strings.Contains(stderr, "before -ls-axis") {
		t.Errorf("resuming an old checkpoint with -ls-axis input: exit %d, %q", code, stderr)
	}
	mustRun(t, "-resume", old, "-epochs", "2", "-checkpoint", old)
	ck, err = checkpoint.Load(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ck.Settings["ls-axis"]; ok || ck.Step != 8 {
		t.Errorf("resumed old checkpoint: settings %v at step %d, want no ls-axis at step 8", ck.Settings, ck.Step)
	}
}
