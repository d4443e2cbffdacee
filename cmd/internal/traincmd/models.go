package traincmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/prior"
)

// modelInfo is one -model: what -help says about it, the example shapes it is listed with,
// and the defaults it needs where the global ones would be poor.
type modelInfo struct {
	name   string
	help   string
	shapes [][]int // the input shapes -help counts parameters for (10 classes)
	// defaults maps flags to values used when the flag is not given: -clip for every
	// private optimizer, -lr and -momentum when the optimizer is dp-sgd.
	defaults map[string]float64
}

// tbDefaults are the training settings of Tramèr & Boneh (ICLR 2021) for their models:
// DP-SGD with momentum 0.9 and clipping norm 0.1, with the learning rate scaled by the
// batch size (base 0.125-1 per 512 examples; 2 at the default batch of 2,048 is base 0.5).
var tbDefaults = map[string]float64{"clip": 0.1, "momentum": 0.9, "lr": 2}

// modelTable lists the -model values in the order -help shows them.
var modelTable = []modelInfo{
	{name: "logreg", help: "softmax regression on the flattened input", shapes: [][]int{{1, 28, 28}}},
	{name: "mlp", help: "one hidden layer of -hidden units", shapes: [][]int{{1, 28, 28}}},
	{name: "cnn", help: "TF Privacy's MNIST tutorial CNN, C×28×28", shapes: [][]int{{1, 28, 28}}},
	{name: "cifar-cnn", help: "TF CIFAR-10 tutorial CNN (24×24 center crop), C×32×32", shapes: [][]int{{3, 32, 32}}},
	{name: "cifar-tb-cnn", help: "Tramèr & Boneh's end-to-end CIFAR-10 CNN, C×32×32", shapes: [][]int{{3, 32, 32}}, defaults: tbDefaults},
	{name: "scatter-linear", help: "ScatterNet (J=2, L=8) + GroupNorm + linear (T&B), C×28×28 or C×32×32", shapes: [][]int{{1, 28, 28}, {3, 32, 32}}, defaults: tbDefaults},
	{name: "scatter-prior-linear", help: "scatter-linear with the features whitened by a dead-leaves prior (no data; computed once, cached), 1×28×28", shapes: [][]int{{1, 28, 28}}, defaults: tbDefaults},
	{name: "scatter-cnn", help: "ScatterNet (J=2, L=8) + GroupNorm + small CNN (T&B), C×28×28 or C×32×32", shapes: [][]int{{1, 28, 28}, {3, 32, 32}}, defaults: tbDefaults},
	{name: "wrn-16-4", help: "De et al.'s WRN-16-4: residual, GroupNorm, weight standardisation, C×32×32", shapes: [][]int{{3, 32, 32}}},
	{name: "resnet-klause", help: "Klause et al.'s ResNet-9 with GroupNorm and ScaleNorm, C×32×32", shapes: [][]int{{3, 32, 32}}},
	{name: "wide-cnn-28", help: "wide residual CNN with GroupNorm, ScaleNorm, weight standardisation, C×28×28", shapes: [][]int{{1, 28, 28}}},
	{name: "res-cnn-28", help: "small residual CNN (wide-cnn-28 at half width) with a pooled dense head, C×28×28", shapes: [][]int{{1, 28, 28}}},
}

var modelNames = func() []string {
	names := make([]string, len(modelTable))
	for i, m := range modelTable {
		names[i] = m.name
	}
	return names
}()

func lookupModel(name string) *modelInfo {
	for i := range modelTable {
		if modelTable[i].name == name {
			return &modelTable[i]
		}
	}
	return nil
}

// resolveModelDefaults fills the flags not given with the model's defaults (after the
// optimizer's, which they replace for dp-sgd).
func (o *options) resolveModelDefaults() {
	info := lookupModel(o.model)
	if info == nil || !private(o.optimizer) {
		return
	}
	for name, v := range info.defaults {
		if o.given(name) {
			continue
		}
		switch name {
		case "clip":
			o.clip = v
		case "lr", "momentum":
			if o.optimizer != "dp-sgd" {
				continue
			}
			if name == "lr" {
				o.lr = v
			} else {
				o.momentum = v
			}
		}
	}
}

// scatterSpec returns the ScatterNet model kind ("scatter-linear", "scatter-cnn") for C×H×W
// images: the 28×28 variant (MNIST, Fashion-MNIST) or the 32×32 one (CIFAR), with the
// GroupNorm's groups of 3 scattering channels for C channels.
func scatterSpec(kind string, shape []int, act models.Activation) (nn.Spec, error) {
	var spec nn.Spec
	switch {
	case len(shape) == 3 && shape[1] == 28 && shape[2] == 28:
		spec = models.ScatterLinearMNIST()
		if kind == "scatter-cnn" {
			spec = models.ScatterCNNMNIST(act)
		}
	case len(shape) == 3 && shape[1] == 32 && shape[2] == 32:
		spec = models.ScatterLinearCIFAR10()
		if kind == "scatter-cnn" {
			spec = models.ScatterCNNCIFAR10(act)
		}
	default:
		return nn.Spec{}, fmt.Errorf("-model %s takes C×28×28 or C×32×32 images", kind)
	}
	spec.Layers = append([]layers.Layer(nil), spec.Layers...)
	for i, l := range spec.Layers {
		if gn, ok := l.(layers.GroupNorm); ok && i == 1 {
			gn.Groups = 27 * shape[0] // 81 channels per image channel, 3 to a group
			spec.Layers[i] = gn
		}
	}
	return spec, nil
}

// paramCount is the number of parameters of spec, from its layers' parameter specs.
func paramCount(spec nn.Spec) (int, error) {
	n, _, err := walkSpec(spec)
	return n, err
}

// walkSpec follows spec's input shape through its layers: the number of parameters and
// the network's output shape, or the first layer that cannot take its input ("layer i:"
// and the layer's own error, which names its kind).
func walkSpec(spec nn.Spec) (params int, out []int, err error) {
	shape, n := spec.InputShape, 0
	for i, l := range spec.Layers {
		for _, p := range l.Params(shape) {
			size := 1
			for _, d := range p.Shape {
				size *= d
			}
			n += size
		}
		out, err := l.OutputShape(shape)
		if err != nil {
			return 0, nil, fmt.Errorf("layer %d: %w", i, err)
		}
		shape = out
	}
	return n, shape, nil
}

// printModels writes the -help section that lists every -model with its parameter count
// for each input shape it is listed with (10 classes, the default -activation and
// -hidden), computed from the specs.
func printModels(w io.Writer) {
	fmt.Fprintf(w, "\nModels (-model; parameters for 10 classes):\n")
	for _, info := range modelTable {
		var counts []string
		for _, shape := range info.shapes {
			o := &options{model: info.name, activation: defaultActivation, own: ownDataFlags{hidden: defaultHidden}}
			spec, err := modelSpec(o, shape, 10)
			if err != nil {
				counts = append(counts, cli.Shape(shape)+": "+err.Error())
				continue
			}
			n, err := paramCount(spec)
			if err != nil {
				counts = append(counts, cli.Shape(shape)+": "+err.Error())
				continue
			}
			counts = append(counts, fmt.Sprintf("%s: %s", cli.Shape(shape), cli.Thousands(n)))
		}
		fmt.Fprintf(w, "  %-15s %s\n  %-15s   parameters %s", info.name, info.help, "", strings.Join(counts, "; "))
		if info.name == "mlp" {
			fmt.Fprintf(w, " (-hidden %d)", defaultHidden)
		}
		fmt.Fprintln(w)
		if len(info.defaults) > 0 {
			fmt.Fprintf(w, "  %-15s   defaults: -clip %s; with dp-sgd -lr %s -momentum %s\n", "",
				fmtFlag(info.defaults["clip"]), fmtFlag(info.defaults["lr"]), fmtFlag(info.defaults["momentum"]))
		}
	}
	fmt.Fprintf(w, "The scatter models compute the scattering features of the training and test sets once\n"+
		"before the first step (about 2 ms of CPU per 28×28 image, 10 ms per 3×32×32); the transform has no\n"+
		"parameters and does not look at the data, so it costs no privacy. -feature-cache DIR keeps them for\n"+
		"later runs on the same data (seeds, ε, optimizers): it must be protected like the data.\n"+
		"scatter-prior-linear also whitens the features by a map learnt from 70,000 synthetic dead-leaves\n"+
		"images (no data, no privacy cost): computed once per machine (about 6 minutes on two busy cores) and kept\n"+
		"in $%s (default privtrain/prior under the user cache directory, 63 MB).\n", prior.CacheEnv)
}

func fmtFlag(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
