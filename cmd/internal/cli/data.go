package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/cifar"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/internal/safeio"
)

// Data loading shared by cmd/train and cmd/evaluate: the built-in data sets (-dataset
// mnist, fashion-mnist, cifar10 with -data) and your own data (-dataset csv:PATH,
// images:DIR, cifar100 with the flags of DataFlags). A checkpoint written by cmd/train
// records these flags in its settings (DataFlags.Settings), so that a command reading
// the checkpoint rebuilds the same data and the same held-out test split
// (DataFlags.FromSettings).

// Defaults of the flags for your own data.
const (
	DefaultTestFraction = 0.2
	DefaultSplitSeed    = 1
)

// The settings that say which rule made a checkpoint's held-out splits, so that a
// command reading the checkpoint makes the same split again:
//
//   - SettingTestSplit: the train/test split of -test-fraction (csv:, images:);
//   - SettingValidationSplit: the validation split of cmd/train -validation and -tune.
//
// Their value for the runs of this version is SplitContentHash: datasets.HashHoldOut,
// which places each example by a hash of its own content, so that neighbouring data sets
// give neighbouring training parts and ε holds per data set that was split. A checkpoint
// with a held-out split but without its setting was split by the stratified rule of
// earlier versions (datasets.HoldOut: one permutation of the whole set), which is made
// again for it, with a warning (LegacyTestSplitWarning, LegacyValidationSplitWarning).
const (
	SettingTestSplit       = "test-split"
	SettingValidationSplit = "validation-split"
	SplitContentHash       = "content-hash"
)

// The warnings for a checkpoint split by the stratified rule of earlier versions (one line
// each, after the command's name and the checkpoint's path).
const (
	LegacyTestSplitWarning       = "its train/test split (-test-fraction) is the stratified one of earlier versions, made again as it was: its ε is per the training part of that split, not per the data set that was split (a new run splits by a hash of each example's content; see docs/own-data.md)"
	LegacyValidationSplitWarning = "its -validation split is the stratified one of earlier versions, made again as it was: its ε is per the part it trained on, not per the training set that was split (a new run splits by a hash of each example's content; see docs/train.md)"
)

// BuiltinShape is the example shape of the built-in data sets.
var BuiltinShape = map[string][]int{"mnist": {1, 28, 28}, "fashion-mnist": {1, 28, 28}, "cifar10": {3, 32, 32}, "cifar100": {3, 32, 32}}

// DataFlags are the flags of -dataset csv:PATH, images:DIR and cifar100.
type DataFlags struct {
	Label, Header, Scale string
	TestFraction         float64
	SplitSeed            uint64
	ImageSize            string
	Channels             int
	Labels               string
	// Categorical, Missing, MissingIndicator: csv: the declared categorical columns
	// ("NAME=A,B,…;…"), the values of missing cells ("NAME=VALUE;…") and whether each
	// such column gets an indicator feature (datasets.CSVOptions).
	Categorical, Missing string
	MissingIndicator     bool
	// Columns: csv: the header's column names as a JSON list, set by LoadData and
	// recorded (setting "csv-columns") when categorical columns or missing values are
	// declared, so that an export can lay the features out by name (TableLayout).
	Columns string
	// LegacySplit: the train/test split of csv: and images: is datasets.HoldOut's, as
	// for a checkpoint written before SettingTestSplit (set by FromSettings and
	// SplitFromSettings); false for new runs, whose split is datasets.HashHoldOut's.
	LegacySplit bool
}

// DataFlagNames are the names of the flags of DataFlags, which are also the keys of
// their settings.
var DataFlagNames = []string{"label", "header", "scale", "test-fraction", "split-seed", "image-size", "channels", "labels", "categorical", "missing", "missing-indicator"}

// AddDataFlags defines the flags of DataFlags in fs, as cmd/train has them.
func AddDataFlags(fs *flag.FlagSet, o *DataFlags) {
	fs.StringVar(&o.Label, "label", "", "csv: the label column, by header name or 0-based index (default: the last column)")
	fs.StringVar(&o.Categorical, "categorical", "", "csv: the categorical columns, by header name, each with its categories: `NAME=A,B,…` (several separated by ;), e.g. sex=F,M; each becomes one 0/1 feature per category. Declared, not read from the data: which values occur would leak")
	fs.StringVar(&o.Missing, "missing", "", "csv: the value a missing cell (empty, ?, NA, N/A, NaN, null, None) of a column takes: `NAME=VALUE` (several separated by ;), a number in the column's units or one of its categories; a missing cell elsewhere is an error")
	fs.BoolVar(&o.MissingIndicator, "missing-indicator", false, "csv: add after each column of -missing a 0/1 feature that is 1 where its cell was missing")
	fs.StringVar(&o.Header, "header", "auto", "csv: does the first row name the columns: auto (yes when a feature cell is not a number) | yes | no")
	fs.StringVar(&o.Scale, "scale", "", "csv (required): the features' range LO:HI, or one LO:HI per feature separated by commas; values are scaled to [0,1] and clipped to the range. Declared, not computed from the data: min/max scaling would leak")
	fs.Float64Var(&o.TestFraction, "test-fraction", DefaultTestFraction, "csv, images: fraction of the examples held out for testing, each example by a hash of its own content and -split-seed (so the number held out is about, not exactly, this fraction, and classes are not stratified)")
	fs.Uint64Var(&o.SplitSeed, "split-seed", DefaultSplitSeed, "csv, images: seed of the train/test split (which examples are held out; not secret)")
	fs.StringVar(&o.ImageSize, "image-size", "", "images: resize every image to `WxH` by area averaging (default: all images must have one size; a different one is an error naming the file)")
	fs.IntVar(&o.Channels, "channels", 0, "images: 1 (gray) or 3 (RGB); 0: 1 when every image is gray, else 3")
	fs.StringVar(&o.Labels, "labels", "fine", "cifar100: fine (100 classes) | coarse (20 superclasses)")
}

// OwnDataKind returns "csv" or "images" and the path of -dataset csv:PATH or images:DIR,
// or "" for the built-in data sets.
func OwnDataKind(dataset string) (kind, path string) {
	for _, k := range []string{"csv", "images"} {
		if p, ok := strings.CutPrefix(dataset, k+":"); ok {
			return k, p
		}
	}
	return "", ""
}

// Settings adds the flags that define the data of a run on -dataset to its settings
// (the keys are the flags' names).
func (o *DataFlags) Settings(dataset string, s map[string]string) {
	kind, _ := OwnDataKind(dataset)
	if kind != "" {
		s["test-fraction"] = strconv.FormatFloat(o.TestFraction, 'g', -1, 64)
		s["split-seed"] = strconv.FormatUint(o.SplitSeed, 10)
		if !o.LegacySplit {
			s[SettingTestSplit] = SplitContentHash
		}
	}
	switch kind {
	case "csv":
		s["label"], s["header"], s["scale"] = o.Label, o.Header, o.Scale
		if o.Categorical != "" { // only when given: the settings of older runs stay as they were
			s["categorical"] = o.Categorical
		}
		if o.Missing != "" {
			s["missing"] = o.Missing
			s["missing-indicator"] = strconv.FormatBool(o.MissingIndicator)
		}
		if o.Columns != "" && (o.Categorical != "" || o.Missing != "") {
			s[SettingCSVColumns] = o.Columns
		}
	case "images":
		s["image-size"], s["channels"] = o.ImageSize, strconv.Itoa(o.Channels)
	}
	if dataset == "cifar100" {
		s["labels"] = o.Labels
	}
}

// SplitFromSettings sets LegacySplit by a checkpoint's settings: true for a run on csv:
// or images: data (its settings have test-fraction) without SettingTestSplit. An
// unknown rule is an error naming it.
func (o *DataFlags) SplitFromSettings(settings map[string]string) error {
	_, held := settings["test-fraction"]
	rule, marked := settings[SettingTestSplit]
	if marked && rule != SplitContentHash {
		return fmt.Errorf("setting %s=%q: unknown (this version knows %s)", SettingTestSplit, rule, SplitContentHash)
	}
	o.LegacySplit = held && !marked
	return nil
}

// FromSettings sets the flags that a checkpoint's settings record, except those in
// given (flags given on the command line), and the rule of its train/test split
// (SplitFromSettings, whatever is given: the rule is the checkpoint's). A value that
// does not parse is an error naming it.
func (o *DataFlags) FromSettings(settings map[string]string, given map[string]bool) error {
	if err := o.SplitFromSettings(settings); err != nil {
		return err
	}
	if v, ok := settings[SettingCSVColumns]; ok {
		o.Columns = v
	}
	for _, name := range DataFlagNames {
		v, ok := settings[name]
		if !ok || given[name] {
			continue
		}
		var err error
		switch name {
		case "label":
			o.Label = v
		case "header":
			o.Header = v
		case "scale":
			o.Scale = v
		case "test-fraction":
			o.TestFraction, err = strconv.ParseFloat(v, 64)
		case "split-seed":
			o.SplitSeed, err = strconv.ParseUint(v, 10, 64)
		case "image-size":
			o.ImageSize = v
		case "channels":
			o.Channels, err = strconv.Atoi(v)
		case "labels":
			o.Labels = v
		case "categorical":
			o.Categorical = v
		case "missing":
			o.Missing = v
		case "missing-indicator":
			o.MissingIndicator, err = strconv.ParseBool(v)
		}
		if err != nil {
			return fmt.Errorf("setting %s=%q: %w", name, v, err)
		}
	}
	return nil
}

// Validate checks the values of the flags that -dataset uses (not whether they apply).
func (o *DataFlags) Validate(dataset string) error {
	if o.Labels != "fine" && o.Labels != "coarse" {
		return exit.Usagef("-labels %q: want fine or coarse", o.Labels)
	}
	kind, path := OwnDataKind(dataset)
	if kind == "" {
		return nil
	}
	if path == "" {
		return exit.Usagef("-dataset %s: give the path after the colon, e.g. -dataset %s:data/train.%s", dataset, kind, map[string]string{"csv": "csv", "images": "dir"}[kind])
	}
	if !(o.TestFraction > 0 && o.TestFraction < 1) {
		return exit.Usagef("-test-fraction %v: want a fraction in (0, 1)", o.TestFraction)
	}
	if kind == "csv" {
		if o.Scale == "" {
			return exit.Usagef("-dataset %s needs -scale LO:HI (or one LO:HI per feature): the range the features can take, declared, because scaling by the data's own min and max is not private", dataset)
		}
		if _, err := datasets.ParseRanges(o.Scale); err != nil {
			return exit.Usagef("-scale %s: %s", o.Scale, strings.TrimPrefix(err.Error(), "datasets: "))
		}
		if _, err := datasets.ParseHeader(o.Header); err != nil {
			return exit.Usagef("-header %q: unknown (want auto, yes, no)", o.Header)
		}
		_, err := o.CSVOptions()
		return err
	}
	if o.Channels != 0 && o.Channels != 1 && o.Channels != 3 {
		return exit.Usagef("-channels %d: want 1, 3 or 0 (by the data)", o.Channels)
	}
	if _, _, err := ParseImageSize(o.ImageSize); err != nil {
		return err
	}
	return nil
}

// CSVOptions are the options of datasets.ReadCSV that the flags declare: the label
// column, the header rule, the ranges, the categorical columns and missing values; a value
// that does not parse is a usage error naming its flag. An unknown -header (from a
// checkpoint's settings; Validate refuses it on the command line) reads as auto.
func (o *DataFlags) CSVOptions() (datasets.CSVOptions, error) {
	usage := func(flag, value string, err error) error {
		return exit.Usagef("-%s %s: %s", flag, value, strings.TrimPrefix(err.Error(), "datasets: "))
	}
	opts := datasets.CSVOptions{Label: o.Label, MissingIndicator: o.MissingIndicator}
	opts.Header, _ = datasets.ParseHeader(o.Header)
	var err error
	if o.Scale != "" {
		if opts.Ranges, err = datasets.ParseRanges(o.Scale); err != nil {
			return opts, usage("scale", o.Scale, err)
		}
	}
	if opts.Categorical, err = datasets.ParseCategorical(o.Categorical); err != nil {
		return opts, usage("categorical", o.Categorical, err)
	}
	if opts.Missing, err = datasets.ParseMissing(o.Missing); err != nil {
		return opts, usage("missing", o.Missing, err)
	}
	if o.MissingIndicator && o.Missing == "" {
		return opts, exit.Usagef("-missing-indicator: give -missing NAME=VALUE for the columns it marks")
	}
	return opts, nil
}

// SettingCSVColumns is the setting that records DataFlags.Columns.
const SettingCSVColumns = "csv-columns"

// TableLayout is the layout of the CSV columns of a run on -dataset csv:PATH whose model
// takes features values (datasets.CSVLayout): by the recorded column names, or, for a
// run without categorical columns or missing values, features numeric columns named x1,
// x2, … in order.
func (o *DataFlags) TableLayout(features int) ([]datasets.CSVColumn, error) {
	opts, err := o.CSVOptions()
	if err != nil {
		return nil, err
	}
	var columns []string
	if o.Columns != "" {
		if err := json.Unmarshal([]byte(o.Columns), &columns); err != nil {
			return nil, fmt.Errorf("setting %s: %v", SettingCSVColumns, err)
		}
	} else {
		if len(opts.Categorical) > 0 || len(opts.Missing) > 0 {
			return nil, fmt.Errorf("categorical columns or missing values declared, but no setting %s", SettingCSVColumns)
		}
		for i := range features {
			columns = append(columns, fmt.Sprintf("x%d", i+1))
		}
		columns = append(columns, "label")
		opts.Label = "label"
	}
	layout, err := datasets.CSVLayout(columns, opts)
	if err != nil {
		return nil, err
	}
	if n := opts.EncodedFeatures(len(layout)); n != features {
		return nil, fmt.Errorf("the CSV layout gives %d features, the model takes %d", n, features)
	}
	return layout, nil
}

// ParseImageSize reads -image-size WxH; "" is 0, 0 (no resizing).
func ParseImageSize(s string) (w, h int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(strings.ToLower(s), "x")
	w, errW := strconv.Atoi(a)
	h, errH := strconv.Atoi(b)
	if !ok || errW != nil || errH != nil || w < 1 || h < 1 || w > 4096 || h > 4096 {
		return 0, 0, exit.Usagef("-image-size %q: want WxH, e.g. 28x28 (each 1 to 4096)", s)
	}
	return w, h, nil
}

// LoadData reads the training and test sets named by -dataset and -data: a built-in
// data set, or your own (csv:PATH, images:DIR: the held-out split of o; cifar100) read
// with o, which must be valid (Validate). name is the data set's name for the record;
// notes are what the user should know about the data.
func LoadData(dataset, data string, o *DataFlags) (train, test datasets.Dataset, name string, notes []string, err error) {
	if kind, _ := OwnDataKind(dataset); kind != "" || dataset == "cifar100" {
		return loadOwnData(dataset, data, o, false)
	}
	return loadBuiltin(dataset, data, false)
}

// LoadTrainData reads the training set of -dataset and -data as LoadData does, without
// reading the test set where it has files of its own (MNIST and Fashion-MNIST from a
// directory of IDX files, CIFAR-10 and CIFAR-100's test batch): for a command that
// never uses the test set (cmd/train -validation, cmd/evaluate -split train or
// validation), so that missing or damaged test files do not stop it. For csv:PATH and
// images:DIR the training set is what remains after the held-out test split of o (the
// same examples as LoadData's); the embedded MNIST sample is decoded whole and its test
// part dropped.
func LoadTrainData(dataset, data string, o *DataFlags) (train datasets.Dataset, name string, notes []string, err error) {
	if kind, _ := OwnDataKind(dataset); kind != "" || dataset == "cifar100" {
		train, _, name, notes, err = loadOwnData(dataset, data, o, true)
		return train, name, notes, err
	}
	train, _, name, notes, err = loadBuiltin(dataset, data, true)
	return train, name, notes, err
}

// loadBuiltin reads a built-in data set; with trainOnly, the test files of MNIST and
// Fashion-MNIST in a directory and CIFAR-10's test batch are not read (test is nil).
// notes name CIFAR-10 files shorter than the official ones (a sample of the data set).
func loadBuiltin(dataset, data string, trainOnly bool) (train, test datasets.Dataset, name string, notes []string, err error) {
	missing := func(dir, how string) error {
		st, err := os.Stat(dir)
		if err != nil {
			return exit.Usagef("-data %s: %s; %s", dir, StatReason(err), how)
		}
		if !st.IsDir() && dataset != "cifar10" { // CIFAR-10's may be the archive
			return exit.Usagef("-data %s is a file, not a directory; %s", dir, how)
		}
		return nil
	}
	var tr, te *datasets.Images
	switch dataset {
	case "mnist":
		if data == "" {
			tr, te, err = mnist.Embedded()
			return tr, te, "mnist-embedded", nil, err
		}
		const how = "MNIST needs its four IDX files (train-images-idx3-ubyte … t10k-labels-idx1-ubyte, raw or .gz) from https://storage.googleapis.com/cvdf-datasets/mnist/, or omit -data for the embedded 8,000-digit sample"
		if err := missing(data, how); err != nil {
			return nil, nil, "", nil, err
		}
		if trainOnly {
			tr, err = mnist.LoadTrain(data)
		} else {
			tr, te, err = mnist.Load(data)
		}
		name = "mnist"
	case "fashion-mnist":
		dir := data
		if dir == "" {
			dir = mnist.DebianFashionDir
		}
		const how = "install Fashion-MNIST with 'apt install dataset-fashion-mnist' (Debian, Ubuntu) or download its four IDX files from https://github.com/zalandoresearch/fashion-mnist and pass -data DIR"
		if err := missing(dir, how); err != nil {
			return nil, nil, "", nil, err
		}
		if trainOnly {
			tr, err = mnist.LoadFashionTrain(dir)
		} else {
			tr, te, err = mnist.LoadFashion(dir)
		}
		name = "fashion-mnist"
	case "cifar10":
		how := "download cifar-10-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html and pass -data with the archive or the directory it unpacks to"
		if data == "" {
			return nil, nil, "", nil, exit.Usagef("-dataset cifar10 needs -data PATH: %s", how)
		}
		if err := missing(data, how); err != nil {
			return nil, nil, "", nil, err
		}
		if trainOnly {
			tr, _, err = cifar.Load10(data, cifar.TrainOnly(), cifar.WithNotes(&notes))
		} else {
			tr, te, err = cifar.Load10(data, cifar.WithNotes(&notes))
		}
		name = "cifar10"
	default:
		return nil, nil, "", nil, exit.Usagef("-dataset %q: unknown", dataset)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, cifar.ErrNotArchive) {
			return nil, nil, "", nil, exit.Usagef("-data %s: %v", data, err)
		}
		return nil, nil, "", nil, fmt.Errorf("-data %s: %w", data, err)
	}
	if te == nil {
		return tr, nil, name, notes, nil // not the typed nil of a *datasets.Images
	}
	return tr, te, name, notes, nil
}

// loadOwnData reads -dataset csv:PATH, images:DIR or cifar100; with trainOnly,
// CIFAR-100's test file is not read (test is nil).
func loadOwnData(dataset, data string, o *DataFlags, trainOnly bool) (train, test datasets.Dataset, name string, notes []string, err error) {
	kind, path := OwnDataKind(dataset)
	if dataset == "cifar100" {
		how := "download cifar-100-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html and pass -data with the archive or the directory it unpacks to"
		if data == "" {
			return nil, nil, "", nil, exit.Usagef("-dataset cifar100 needs -data PATH: %s", how)
		}
		if _, err := os.Stat(data); err != nil {
			return nil, nil, "", nil, exit.Usagef("-data %s: %s; %s", data, StatReason(err), how)
		}
		opts := []cifar.Option{cifar.WithNotes(&notes)}
		name = "cifar100"
		if o.Labels == "coarse" {
			opts = append(opts, cifar.CoarseLabels())
			name = "cifar100-coarse"
		}
		if trainOnly {
			opts = append(opts, cifar.TrainOnly())
		}
		tr, te, err := cifar.Load100(data, opts...)
		if errors.Is(err, cifar.ErrNotArchive) {
			return nil, nil, "", nil, exit.Usagef("-data %s: %v", data, err)
		}
		if err != nil {
			return nil, nil, "", nil, fmt.Errorf("-data %s: %w", data, err)
		}
		if te == nil {
			return tr, nil, name, notes, nil // not the typed nil of a *datasets.Images
		}
		return tr, te, name, notes, nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, nil, "", nil, exit.Usagef("-dataset %s: %s", dataset, StatReason(err))
	}
	var all datasets.Dataset
	var classes []string
	switch kind {
	case "csv":
		opts, err := o.CSVOptions()
		if err != nil {
			return nil, nil, "", nil, err
		}
		t, err := datasets.LoadCSV(path, opts)
		if err != nil {
			return nil, nil, "", nil, dataError(dataset, err)
		}
		if t.Columns != nil {
			b, _ := json.Marshal(t.Columns)
			o.Columns = string(b)
		}
		if t.LabelWarning != "" {
			notes = append(notes, "warning: "+t.LabelWarning)
		}
		if t.Clipped > 0 {
			notes = append(notes, fmt.Sprintf("%s feature values were outside the -scale range and were clipped to it (a count for you: it depends on the data)", Thousands(t.Clipped)))
		}
		all, classes = t, t.ClassNames
	case "images":
		w, h, err := ParseImageSize(o.ImageSize)
		if err != nil {
			return nil, nil, "", nil, err
		}
		f, err := datasets.LoadImageFolder(path, datasets.ImageFolderOptions{Channels: o.Channels, Width: w, Height: h})
		if err != nil {
			return nil, nil, "", nil, dataError(dataset, err)
		}
		if len(f.Skipped) > 0 {
			notes = append(notes, SkippedWarning(f.Skipped))
		}
		all, classes = f, f.ClassNames
	}
	if len(classes) < 2 {
		return nil, nil, "", nil, exit.Usagef("-dataset %s: %d class (%s); want at least 2", dataset, len(classes), strings.Join(classes, ", "))
	}
	notes = append(notes, "classes: "+classList(classes))
	if o.LegacySplit {
		train, test, err = datasets.HoldOut(all, o.TestFraction, o.SplitSeed)
	} else {
		train, test, err = datasets.HashHoldOut(all, o.TestFraction, o.SplitSeed, datasets.DomainTest)
	}
	if err != nil {
		return nil, nil, "", nil, exit.Usagef("-test-fraction %v: %s (choose another fraction or -split-seed)", o.TestFraction, strings.TrimPrefix(err.Error(), "datasets: "))
	}
	return train, test, dataset, notes, nil
}

// SkippedWarning is the one line that says which files of an image folder's class
// folders were skipped for not being PNG or JPEG images (the first three named).
func SkippedWarning(skipped []string) string {
	const show = 3
	names := skipped[:min(len(skipped), show)]
	more := ""
	if len(skipped) > show {
		more = ", …"
	}
	plural := "s that are"
	if len(skipped) == 1 {
		plural = " that is"
	}
	return fmt.Sprintf("warning: skipped %s file%s not a PNG or JPEG image (%s%s)", Thousands(len(skipped)), plural, strings.Join(names, ", "), more)
}

// dataError makes a data fault a one-line error: bad content or a missing file is the
// user's to fix (exit 2), anything else a failure.
func dataError(flagValue string, err error) error {
	_, path := OwnDataKind(flagValue)
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "datasets: "), path+": ")
	if kind, _ := OwnDataKind(flagValue); kind == "csv" && errors.Is(err, safeio.ErrNotRegular) {
		return exit.Usagef("-dataset %s: %s; csv:PATH names a CSV file (one example per row; a folder with a subfolder of images per class is images:DIR)", flagValue, strings.TrimSuffix(msg, "; give a plain file"))
	}
	var ce *datasets.CSVError
	if errors.As(err, &ce) && (ce.NotNumber || ce.MissingCell) {
		name := ce.Name
		if name == "" {
			name = "NAME"
		}
		if ce.NotNumber {
			msg += fmt.Sprintf("; if the column is categorical, declare its categories: -categorical %s=A,B,…; if it is the label, -label %s", name, name)
		} else {
			msg += fmt.Sprintf(": -missing %s=VALUE", name)
		}
	}
	if errors.Is(err, datasets.ErrCSV) || errors.Is(err, datasets.ErrImage) || errors.Is(err, fs.ErrNotExist) {
		return exit.Usagef("-dataset %s: %s", flagValue, msg)
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

// StatReason is the reason of a failed os.Stat, without the path.
func StatReason(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file or directory"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
