package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/cifar"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

// Defaults of the flags for your own data.
const (
	defaultTestFraction = 0.2
	defaultSplitSeed    = 1
	defaultHidden       = 128
)

// ownDataFlags are the flags of -dataset csv:PATH, images:DIR and cifar100.
type ownDataFlags struct {
	label, header, scale string
	testFraction         float64
	splitSeed            uint64
	imageSize            string
	channels             int
	labels               string
	hidden               int
}

func addOwnDataFlags(fs *flag.FlagSet, o *ownDataFlags) {
	fs.StringVar(&o.label, "label", "", "csv: the label column, by header name or 0-based index (default: the last column)")
	fs.StringVar(&o.header, "header", "auto", "csv: does the first row name the columns: auto (yes when a feature cell is not a number) | yes | no")
	fs.StringVar(&o.scale, "scale", "", "csv (required): the features' range LO:HI, or one LO:HI per feature separated by commas; values are scaled to [0,1] and clipped to the range. Declared, not computed from the data: min/max scaling would leak")
	fs.Float64Var(&o.testFraction, "test-fraction", defaultTestFraction, "csv, images: fraction of the examples held out for testing, stratified by label")
	fs.Uint64Var(&o.splitSeed, "split-seed", defaultSplitSeed, "csv, images: seed of the train/test split (which examples are held out; not secret)")
	fs.StringVar(&o.imageSize, "image-size", "", "images: resize every image to `WxH` by area averaging (default: all images must have one size; a different one is an error naming the file)")
	fs.IntVar(&o.channels, "channels", 0, "images: 1 (gray) or 3 (RGB); 0: 1 when every image is gray, else 3")
	fs.StringVar(&o.labels, "labels", "fine", "cifar100: fine (100 classes) | coarse (20 superclasses)")
	fs.IntVar(&o.hidden, "hidden", defaultHidden, "mlp: units of the hidden layer")
}

// ownDataKind returns "csv" or "images" and the path of -dataset csv:PATH or images:DIR,
// or "" for the built-in data sets.
func ownDataKind(dataset string) (kind, path string) {
	for _, k := range []string{"csv", "images"} {
		if p, ok := strings.CutPrefix(dataset, k+":"); ok {
			return k, p
		}
	}
	return "", ""
}

// validateOwnData checks the flags of -dataset csv:, images: and cifar100 that need no data.
func (o *options) validateOwnData() error {
	kind, path := ownDataKind(o.dataset)
	given := func(names ...string) string {
		for _, n := range names {
			if o.set[n] {
				return n
			}
		}
		return ""
	}
	if kind == "" {
		if f := given("label", "header", "scale", "test-fraction", "split-seed", "image-size", "channels"); f != "" {
			return usagef("-%s applies to -dataset csv:PATH or images:DIR, not %s", f, o.dataset)
		}
	}
	if f := given("labels"); f != "" && o.dataset != "cifar100" {
		return usagef("-labels applies to -dataset cifar100, not %s", o.dataset)
	}
	if o.own.labels != "fine" && o.own.labels != "coarse" {
		return usagef("-labels %q: want fine or coarse", o.own.labels)
	}
	if f := given("hidden"); f != "" && o.model != "mlp" {
		return usagef("-hidden applies to -model mlp, not %s", o.model)
	}
	if o.own.hidden < 1 {
		return usagef("-hidden %d: want ≥ 1", o.own.hidden)
	}
	if kind == "" {
		return nil
	}
	if path == "" {
		return usagef("-dataset %s: give the path after the colon, e.g. -dataset %s:data/train.%s", o.dataset, kind, map[string]string{"csv": "csv", "images": "dir"}[kind])
	}
	if o.set["data"] {
		return usagef("-data: -dataset %s names its own path", o.dataset)
	}
	if !(o.own.testFraction > 0 && o.own.testFraction < 1) {
		return usagef("-test-fraction %v: want a fraction in (0, 1)", o.own.testFraction)
	}
	if kind == "csv" {
		if f := given("image-size", "channels"); f != "" {
			return usagef("-%s applies to -dataset images:DIR, not csv", f)
		}
		if o.own.scale == "" {
			return usagef("-dataset %s needs -scale LO:HI (or one LO:HI per feature): the range the features can take, declared, because scaling by the data's own min and max is not private", o.dataset)
		}
		if _, err := datasets.ParseRanges(o.own.scale); err != nil {
			return usagef("-scale %s: %s", o.own.scale, strings.TrimPrefix(err.Error(), "datasets: "))
		}
		if err := oneOf("header", o.own.header, []string{"auto", "yes", "no"}); err != nil {
			return err
		}
		return nil
	}
	if f := given("label", "header", "scale"); f != "" {
		return usagef("-%s applies to -dataset csv:PATH, not images (pixels are scaled by /255)", f)
	}
	if o.own.channels != 0 && o.own.channels != 1 && o.own.channels != 3 {
		return usagef("-channels %d: want 1, 3 or 0 (by the data)", o.own.channels)
	}
	if _, _, err := parseImageSize(o.own.imageSize); err != nil {
		return err
	}
	return nil
}

func parseImageSize(s string) (w, h int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(strings.ToLower(s), "x")
	w, errW := strconv.Atoi(a)
	h, errH := strconv.Atoi(b)
	if !ok || errW != nil || errH != nil || w < 1 || h < 1 || w > 4096 || h > 4096 {
		return 0, 0, usagef("-image-size %q: want WxH, e.g. 28x28 (each 1 to 4096)", s)
	}
	return w, h, nil
}

// loadOwnData reads -dataset csv:PATH, images:DIR or cifar100.
func loadOwnData(o *options) (train, test datasets.Dataset, name string, notes []string, err error) {
	kind, path := ownDataKind(o.dataset)
	if o.dataset == "cifar100" {
		how := "download cifar-100-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html and pass -data with the archive or the directory it unpacks to"
		if o.data == "" {
			return nil, nil, "", nil, usagef("-dataset cifar100 needs -data PATH: %s", how)
		}
		if _, err := os.Stat(o.data); err != nil {
			return nil, nil, "", nil, usagef("-data %s: %s; %s", o.data, statReason(err), how)
		}
		var opts []cifar.Option
		name = "cifar100"
		if o.own.labels == "coarse" {
			opts = append(opts, cifar.CoarseLabels())
			name = "cifar100-coarse"
		}
		tr, te, err := cifar.Load100(o.data, opts...)
		if err != nil {
			return nil, nil, "", nil, fmt.Errorf("-data %s: %w", o.data, err)
		}
		return tr, te, name, nil, nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, nil, "", nil, usagef("-dataset %s: %s", o.dataset, statReason(err))
	}
	var all datasets.Dataset
	var classes []string
	switch kind {
	case "csv":
		ranges, _ := datasets.ParseRanges(o.own.scale)
		header := map[string]datasets.Header{"auto": datasets.HeaderAuto, "yes": datasets.HeaderYes, "no": datasets.HeaderNo}[o.own.header]
		t, err := datasets.LoadCSV(path, datasets.CSVOptions{Label: o.own.label, Header: header, Ranges: ranges})
		if err != nil {
			return nil, nil, "", nil, dataError(o.dataset, err)
		}
		if t.Clipped > 0 {
			notes = append(notes, fmt.Sprintf("%s feature values were outside the -scale range and were clipped to it (a count for you: it depends on the data)", thousands(t.Clipped)))
		}
		all, classes = t, t.ClassNames
	case "images":
		w, h, _ := parseImageSize(o.own.imageSize)
		f, err := datasets.LoadImageFolder(path, datasets.ImageFolderOptions{Channels: o.own.channels, Width: w, Height: h})
		if err != nil {
			return nil, nil, "", nil, dataError(o.dataset, err)
		}
		all, classes = f, f.ClassNames
	}
	if len(classes) < 2 {
		return nil, nil, "", nil, usagef("-dataset %s: %d class (%s); want at least 2", o.dataset, len(classes), strings.Join(classes, ", "))
	}
	notes = append(notes, "classes: "+classList(classes))
	train, test, err = datasets.HoldOut(all, o.own.testFraction, o.own.splitSeed)
	if err != nil {
		return nil, nil, "", nil, usagef("-test-fraction %v: %s", o.own.testFraction, strings.TrimPrefix(err.Error(), "datasets: "))
	}
	return train, test, o.dataset, notes, nil
}

// dataError makes a data fault a one-line error: bad content or a missing file is the
// user's to fix (exit 2), anything else a failure.
func dataError(flagValue string, err error) error {
	_, path := ownDataKind(flagValue)
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "datasets: "), path+": ")
	if errors.Is(err, datasets.ErrCSV) || errors.Is(err, datasets.ErrImage) || errors.Is(err, fs.ErrNotExist) {
		return usagef("-dataset %s: %s", flagValue, msg)
	}
	return fmt.Errorf("-dataset %s: %s", flagValue, msg)
}

func classList(names []string) string {
	const show = 12
	parts := make([]string, 0, show+1)
	for i, n := range names {
		if i == show {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(names)))
			break
		}
		parts = append(parts, fmt.Sprintf("%d=%s", i, n))
	}
	return strings.Join(parts, ", ")
}

// modelSpec returns the network of -model for examples of shape with classes classes,
// or a usage error naming both shapes when the network cannot take them.
func modelSpec(o *options, shape []int, classes int) (nn.Spec, error) {
	act := models.ReLU
	if o.activation == "tanh" {
		act = models.Tanh
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
	}
	if o.model == "cnn" || o.model == "cifar-cnn" {
		want := spec.InputShape
		if len(shape) != 3 || shape[1] != want[1] || shape[2] != want[2] {
			return nn.Spec{}, usagef("-model %s takes C×%d×%d images, but -dataset %s has examples of %s (use %s)",
				o.model, want[1], want[2], o.dataset, shapeString(shape), modelHint(shape))
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
		return "", usagef("no built-in CNN takes %s images (cnn: C×28×28, cifar-cnn: C×32×32); resize with -image-size 28x28 or 32x32, or choose -model logreg or mlp", shapeString(shape))
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
// own data to its settings, which a resumed run must match.
func (o *options) ownDataSettings(s map[string]string) {
	kind, _ := ownDataKind(o.dataset)
	if kind != "" {
		s["test-fraction"] = strconv.FormatFloat(o.own.testFraction, 'g', -1, 64)
		s["split-seed"] = strconv.FormatUint(o.own.splitSeed, 10)
	}
	switch kind {
	case "csv":
		s["label"], s["header"], s["scale"] = o.own.label, o.own.header, o.own.scale
	case "images":
		s["image-size"], s["channels"] = o.own.imageSize, strconv.Itoa(o.own.channels)
	}
	if o.dataset == "cifar100" {
		s["labels"] = o.own.labels
	}
	if o.model == "mlp" {
		s["hidden"] = strconv.Itoa(o.own.hidden)
	}
}
