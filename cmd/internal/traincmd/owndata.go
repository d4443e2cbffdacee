package traincmd

import (
	"flag"
	"fmt"
	"slices"
	"strconv"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

// Defaults of the flags for your own data.
const (
	defaultHidden = 128
)

// ownDataFlags are the flags of -dataset csv:PATH, images:DIR and cifar100 (shared with
// cmd/evaluate, which reads them back from a checkpoint's settings) and -hidden.
type ownDataFlags struct {
	cli.DataFlags
	hidden int
}

func addOwnDataFlags(fs *flag.FlagSet, o *ownDataFlags) {
	cli.AddDataFlags(fs, &o.DataFlags)
	fs.Lookup("split-seed").Usage = "seed of the held-out splits, which examples are held out (not secret): csv, images: the train/test split; any data set: the -validation split"
	fs.IntVar(&o.hidden, "hidden", defaultHidden, "mlp: units of the hidden layer")
}

// validateOwnData checks the flags of -dataset csv:, images: and cifar100 that need no data.
func (o *options) validateOwnData() error {
	kind, path := cli.OwnDataKind(o.dataset)
	given := func(names ...string) string {
		for _, n := range names {
			if o.set[n] {
				return n
			}
		}
		return ""
	}
	if kind == "" {
		if f := given("label", "header", "scale", "categorical", "missing", "missing-indicator", "test-fraction", "image-size", "channels"); f != "" {
			return exit.Usagef("-%s applies to -dataset csv:PATH or images:DIR, not %s", f, o.dataset)
		}
		if o.set["split-seed"] && o.validation == 0 {
			return exit.Usagef("-split-seed applies to -dataset csv:PATH or images:DIR, or with -validation; not %s without -validation", o.dataset)
		}
	}
	if f := given("labels"); f != "" && o.dataset != "cifar100" {
		return exit.Usagef("-labels applies to -dataset cifar100, not %s", o.dataset)
	}
	if f := given("hidden"); f != "" && o.model != "mlp" {
		return exit.Usagef("-hidden applies to -model mlp, not %s", o.model)
	}
	if o.own.hidden < 1 {
		return exit.Usagef("-hidden %d: want ≥ 1", o.own.hidden)
	}
	switch kind {
	case "csv":
		if f := given("image-size", "channels"); f != "" {
			return exit.Usagef("-%s applies to -dataset images:DIR, not csv", f)
		}
	case "images":
		if f := given("label", "header", "scale", "categorical", "missing", "missing-indicator"); f != "" {
			return exit.Usagef("-%s applies to -dataset csv:PATH, not images (pixels are scaled by /255)", f)
		}
	}
	if kind != "" && path != "" && o.set["data"] {
		return exit.Usagef("-data: -dataset %s names its own path", o.dataset)
	}
	return o.own.Validate(o.dataset)
}

// modelSpec returns the network of -model for examples of shape with classes classes,
// or a usage error naming both shapes when the network cannot take them.
func modelSpec(o *options, shape []int, classes int) (nn.Spec, error) {
	act := models.ReLU
	if o.activation == "tanh" {
		act = models.Tanh
	}
	if isModelFile(o.model) {
		return modelFileSpec(o, shape, classes)
	}
	var spec nn.Spec
	switch o.model {
	case "logreg":
		spec = models.LogisticRegression()
	case "mlp":
		spec = nn.Spec{Name: fmt.Sprintf("mlp-%d-%s", o.own.hidden, act), Layers: []layers.Layer{
			layers.Flatten{}, layers.Dense{Units: o.own.hidden}, actLayer(act), layers.Dense{Units: classes},
		}}
	case "cnn":
		spec = models.MNISTCNN(act)
	case "cifar-cnn":
		spec = models.CIFAR10CNN(act)
	case "cifar-tb-cnn":
		spec = models.CIFAR10TBCNN(act)
	case "wrn-16-4":
		spec = models.WRN164()
	case "resnet-klause":
		spec = models.ResNetKlause()
	case "wide-cnn-28":
		spec = models.WideCNN28()
	case "res-cnn-28":
		spec = models.ResCNN28()
	case "scatter-prior-linear":
		spec = models.ScatterPriorLinearMNIST()
		if !slices.Equal(shape, spec.InputShape) {
			return nn.Spec{}, exit.Usagef("-model %s takes 1×28×28 images, but -dataset %s has examples of %s (use scatter-linear)",
				o.model, o.dataset, cli.Shape(shape))
		}
	case "scatter-linear", "scatter-cnn":
		var err error
		if spec, err = scatterSpec(o.model, shape, act); err != nil {
			return nn.Spec{}, exit.Usagef("%v, but -dataset %s has examples of %s", err, o.dataset, cli.Shape(shape))
		}
	}
	switch o.model {
	case "cnn", "cifar-cnn", "cifar-tb-cnn", "wrn-16-4", "resnet-klause", "wide-cnn-28", "res-cnn-28":
		want := spec.InputShape
		if len(shape) != 3 || shape[1] != want[1] || shape[2] != want[2] {
			return nn.Spec{}, exit.Usagef("-model %s takes C×%d×%d images, but -dataset %s has examples of %s (use %s)",
				o.model, want[1], want[2], o.dataset, cli.Shape(shape), modelHint(shape))
		}
	}
	spec.InputShape = append([]int(nil), shape...)
	spec.NumClasses = classes
	if last, ok := spec.Layers[len(spec.Layers)-1].(layers.Dense); ok {
		last.Units = classes
		spec.Layers = append(spec.Layers[:len(spec.Layers)-1:len(spec.Layers)-1], last)
	}
	return spec, nil
}

func actLayer(a models.Activation) layers.Layer {
	if a == models.Tanh {
		return layers.Tanh{}
	}
	return layers.ReLU{}
}

// defaultModel is the network for examples of shape when -model is not given.
func defaultModel(shape []int) (string, error) {
	if len(shape) == 3 {
		switch {
		case shape[1] == 28 && shape[2] == 28:
			return "cnn", nil
		case shape[1] == 32 && shape[2] == 32:
			return "cifar-cnn", nil
		}
		return "", exit.Usagef("no built-in CNN takes %s images (cnn: C×28×28, cifar-cnn: C×32×32); resize with -image-size 28x28 or 32x32, or choose -model logreg or mlp", cli.Shape(shape))
	}
	return "logreg", nil
}

func modelHint(shape []int) string {
	if m, err := defaultModel(shape); err == nil && m != "logreg" {
		return "-model " + m
	}
	if len(shape) == 3 {
		return "-image-size 28x28 or 32x32, or -model logreg or mlp"
	}
	return "-model logreg or mlp"
}

// ownDataSettings adds the flags that define the data and the network of a run on your
// own data to its settings, which a resumed run must match, and from which cmd/evaluate
// and cmd/predict read the data back.
func (o *options) ownDataSettings(s map[string]string) {
	o.own.Settings(o.dataset, s)
	if o.model == "mlp" {
		s["hidden"] = strconv.Itoa(o.own.hidden)
	}
}
