// Package evaluatecmd is the evaluate command, shared by cmd/evaluate and cmd/privtrain (evaluate subcommand).
package evaluatecmd

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	_ "github.com/privtrain/privtrain/models" // old checkpoints without an architecture
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

const usageHeader = `usage: evaluate -checkpoint FILE [-dataset NAME] [-data PATH] [-split test|train|validation] [-json]

Runs the model of a checkpoint on a data set and reports accuracy, mean loss (the
cross-entropy, or the focal loss the model trained on with train -loss focal:GAMMA, then
with the mean cross-entropy beside it), per-class accuracy and the confusion matrix (rows: true class, columns: predicted),
the classes named as the training data named them (the checkpoint records the names).
Without -dataset: the data set the checkpoint was trained on, else mnist. For a run on
csv:PATH, images:DIR or cifar100, the checkpoint's settings (-scale, -label, -header,
-image-size, -channels, -labels, and the held-out split of -test-fraction and
-split-seed) rebuild the same test set; -dataset csv:PATH or images:DIR reads the data
from another place with those settings. Those flags, given, override the checkpoint's
settings (a -scale other than the run's is refused); their defaults below apply only to
a checkpoint without them. For a run trained with -validation, -split train is the part
of the training set it trained on and -split validation the part it held out (the
checkpoint records the fraction, the split seed and the rule). A checkpoint from before
the content-hash splits is split by the stratified rule it was trained with, and
evaluate warns that its ε is per the part it trained on, not per the data set split.

Flags:
`

var datasetNames = []string{"mnist", "fashion-mnist", "cifar10", "cifar100", "csv:PATH", "images:DIR"}

// Main runs the evaluate command with args (without the program name) and returns its exit status.
func Main(args []string) int { return run(args, os.Stdout, os.Stderr) }

// report is the -json output.
type report struct {
	Checkpoint string `json:"checkpoint"`
	Model      string `json:"model"`
	Dataset    string `json:"dataset"`
	Split      string `json:"split"`
	Examples   int    `json:"examples"`
	Correct    int    `json:"correct"`
	// Accuracy is Correct/Examples; Loss the mean of the model's loss: the softmax
	// cross-entropy, or for a model trained with train -loss focal:GAMMA the focal loss
	// (LossFunction "focal:GAMMA", and CrossEntropy the mean cross-entropy, to compare
	// with cross-entropy runs; both absent for the cross-entropy). Loss is what train
	// reports as test_loss.
	Accuracy     float64  `json:"accuracy"`
	Loss         float64  `json:"loss"`
	LossFunction string   `json:"loss_function,omitempty"`
	CrossEntropy *float64 `json:"cross_entropy,omitempty"`
	// ClassExamples[k] counts the examples of true class k; PerClassAccuracy[k] is the
	// fraction of them predicted k (null when there are none).
	ClassExamples    []int      `json:"class_examples"`
	PerClassAccuracy []*float64 `json:"per_class_accuracy"`
	// ConfusionMatrix[true][predicted] counts examples.
	ConfusionMatrix [][]int `json:"confusion_matrix"`
	// ClassNames[k] names class k of the data evaluated: the data's own names (the
	// digits, the garments, the CIFAR classes, the folders of images:DIR, the labels of
	// csv:PATH), else those the checkpoint records, else the class numbers "0", "1", ….
	ClassNames []string `json:"class_names"`
	// Parameters are the parameters evaluated: "averaged" (train -ema's average, of
	// decay EMA) or "raw" (EMA 0).
	Parameters string  `json:"parameters"`
	EMA        float64 `json:"ema"`
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evaluate", flag.ContinueOnError)
	ckpt := fs.String("checkpoint", "", "checkpoint `FILE` written by train -checkpoint (required)")
	dataset := fs.String("dataset", "", "data set: mnist | fashion-mnist | cifar10 | cifar100 | csv:PATH | images:DIR (default: the checkpoint's, else mnist); csv:PATH or images:DIR of a checkpoint trained on such data reads the file or folder at its new place with the run's settings")
	data := fs.String("data", "", "`PATH` of the data set, as for train: mnist: the embedded sample unless a directory of the four IDX files; fashion-mnist: "+mnist.DebianFashionDir+"; cifar10, cifar100: required")
	split := fs.String("split", "test", "which part: test | train | validation (for csv: and images: data, test is the held-out split of -test-fraction and -split-seed; for a run trained with -validation, train is the part it trained on and validation the part it held out, by the checkpoint's settings)")
	jsonOut := fs.Bool("json", false, "print one JSON object instead of text")
	params := cli.AddParamsFlag(fs)
	signing := cli.SigningFlag(fs, "evaluate", stderr)
	var own cli.DataFlags
	cli.AddDataFlags(fs, &own)
	return cli.Run("evaluate", usageHeader, fs, args, stdout, stderr, func() error {
		if fs.NArg() > 0 {
			return exit.Usagef("unexpected argument %q (flags only; see evaluate -help)", fs.Arg(0))
		}
		if *split != "test" && *split != "train" && *split != "validation" {
			return exit.Usagef("-split %q: want test, train or validation", *split)
		}
		if kind, _ := cli.OwnDataKind(*dataset); *dataset != "" && kind == "" && !slices.Contains(datasetNames, *dataset) {
			return exit.Usagef("-dataset %q: want one of %s", *dataset, strings.Join(datasetNames, ", "))
		}
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		c, p, err := cli.PredictorParams(*ckpt, *params, signing)
		if err != nil {
			return err
		}
		name, err := dataOf(c, *ckpt, *dataset, &own, given)
		if err != nil {
			return err
		}
		if own.LegacySplit {
			fmt.Fprintf(stderr, "evaluate: warning: %s: %s\n", *ckpt, cli.LegacyTestSplitWarning)
		}
		var held *heldOut // the run's validation split: -split test does without it
		if *split != "test" {
			if held, err = heldOutOf(c, *ckpt); err != nil {
				return err
			}
		}
		if *split == "validation" && held == nil {
			return exit.Usagef("-split validation: %s was trained without -validation (on the whole training set, evaluated on the test set): it has no validation split; use -split train or test", *ckpt)
		}
		trained, same := trainedOn(c, name)
		if *split == "validation" && !same {
			return exit.Usagef("-split validation: the validation split of %s is part of the data set it was trained on, %s, not of -dataset %s", *ckpt, trained, name)
		}
		if !same {
			held = nil // another data set: none of its examples was held out
		}
		if held != nil && *split != "test" && given["split-seed"] && own.SplitSeed != held.seed {
			return exit.Usagef("-split-seed %d: %s was trained with -validation %s -split-seed %d, and -split %s is the run's split (leave -split-seed out)",
				own.SplitSeed, *ckpt, held.setting, held.seed, *split)
		}
		if held != nil && held.legacy {
			fmt.Fprintf(stderr, "evaluate: warning: %s: %s\n", *ckpt, cli.LegacyValidationSplitWarning)
		}
		var ds datasets.Dataset
		var dsName string
		if *split == "test" {
			if _, ds, dsName, _, err = cli.LoadData(name, *data, &own); err != nil {
				return err
			}
		} else {
			// The test set is not needed: its own files (MNIST's t10k, CIFAR's test batch) are not read.
			var train datasets.Dataset
			if train, dsName, _, err = cli.LoadTrainData(name, *data, &own); err != nil {
				return err
			}
			if ds, err = trainingPart(c, *ckpt, name, *split, held, train); err != nil {
				return err
			}
			if *split == "train" {
				fmt.Fprintln(stderr, "evaluate: note: metrics on the training split are computed on the raw training data and are not covered by ε")
				if ds.Len() < train.Len() {
					fmt.Fprintf(stderr, "evaluate: note: the training split is the %s examples the run trained on; the %s that -validation %s held out are left out (-split validation scores them)\n",
						cli.Thousands(ds.Len()), cli.Thousands(train.Len()-ds.Len()), held.setting)
				}
			} else {
				fmt.Fprintf(stderr, "evaluate: note: the validation split is the %s of the %s training examples that -validation %s held out (split seed %d): not trained on; its metrics are not covered by ε\n",
					cli.Thousands(ds.Len()), cli.Thousands(train.Len()), held.setting, held.seed)
			}
		}
		if !slices.Equal(ds.Shape(), p.InputShape()) {
			return exit.Usagef("-dataset %s has %s examples; the model of %s (%s) expects %s", name, cli.Shape(ds.Shape()), *ckpt, c.Model, cli.Shape(p.InputShape()))
		}
		if ds.NumClasses() != p.NumClasses() {
			return exit.Usagef("-dataset %s has %d classes; the model of %s (%s) has %d", name, ds.NumClasses(), *ckpt, c.Model, p.NumClasses())
		}
		r, err := evaluate(p, ds)
		if err != nil {
			return err
		}
		r.Checkpoint, r.Model, r.Dataset, r.Split = *ckpt, c.Model, dsName, *split
		r.ClassNames = classNames(c, ds, p.NumClasses(), stderr)
		r.Parameters = cli.ParamsRaw
		if c.EMAParams != nil {
			r.Parameters, r.EMA = cli.ParamsAveraged, c.EMA
		}
		if *jsonOut {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdout, "%s\n", b)
			return err
		}
		return printText(stdout, r, c)
	})
}

// dataOf returns the -dataset to evaluate on and sets own to the flags that read it:
// without -dataset, the checkpoint's (by its settings, else its recorded name); for data
// of the kind the checkpoint was trained on (csv:, images:, cifar100), the run's settings
// (the scaling, the label column, the held-out split) unless a flag overrides them.
func dataOf(c *checkpoint.Training, ckpt, dataset string, own *cli.DataFlags, given map[string]bool) (string, error) {
	trained := c.Settings["dataset"]
	if trained == "" {
		trained = datasetOf(c)
	}
	name := dataset
	if name == "" {
		name = trained
	}
	kind, path := cli.OwnDataKind(name)
	trainedKind, _ := cli.OwnDataKind(trained)
	if kind == trainedKind && (kind != "" || name == "cifar100" && trained == "cifar100") {
		if s := c.Settings["scale"]; given["scale"] && s != "" && own.Scale != s {
			return "", exit.Usagef("-scale %s: the model of %s was trained with -scale %s, the transform its inputs need; leave -scale out", own.Scale, ckpt, s)
		}
		if err := own.FromSettings(c.Settings, given); err != nil {
			return "", fmt.Errorf("-checkpoint %s: %w", ckpt, err)
		}
		if c.Dataset.Name == "cifar100-coarse" && c.Settings["labels"] == "" && !given["labels"] {
			own.Labels = "coarse"
		}
	}
	if err := own.Validate(name); err != nil {
		return "", err
	}
	if dataset == "" && kind != "" {
		if _, err := os.Stat(path); err != nil {
			return "", exit.Usagef("-dataset %s (the data the checkpoint was trained on): %s; give -dataset %s:PATH where it is now", name, cli.StatReason(err), kind)
		}
	}
	return name, nil
}

// heldOut is the validation split of a run trained with -validation: the fraction of
// the training set held out, the seed of the split and its rule.
type heldOut struct {
	fraction float64
	setting  string // the fraction as the settings record it
	seed     uint64
	// legacy: the stratified split of checkpoints without cli.SettingValidationSplit
	// (datasets.HoldOut); else the content-hash split (datasets.HashHoldOut).
	legacy bool
}

// heldOutOf reads the validation split from the checkpoint's settings, as cmd/train
// records them (validation, split-seed and validation-split); nil for a run without
// -validation. A value that does not parse, or a rule this version does not know, is a
// damaged checkpoint.
func heldOutOf(c *checkpoint.Training, ckpt string) (*heldOut, error) {
	v, ok := c.Settings["validation"]
	if !ok {
		return nil, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f < 1) {
		return nil, fmt.Errorf("-checkpoint %s: setting validation=%q: want a fraction in (0, 1)", ckpt, v)
	}
	s, ok := c.Settings["split-seed"]
	seed, err := strconv.ParseUint(s, 10, 64)
	if !ok || err != nil {
		return nil, fmt.Errorf("-checkpoint %s: setting validation=%s without a split-seed (%q): the held-out split cannot be rebuilt", ckpt, v, s)
	}
	rule, marked := c.Settings[cli.SettingValidationSplit]
	if marked && rule != cli.SplitContentHash {
		return nil, fmt.Errorf("-checkpoint %s: setting %s=%q: unknown (this version knows %s)", ckpt, cli.SettingValidationSplit, rule, cli.SplitContentHash)
	}
	return &heldOut{fraction: f, setting: v, seed: seed, legacy: !marked}, nil
}

// trainedOn returns the -dataset the checkpoint was trained on and whether name is that
// data set (for csv: and images:, data of the same kind, which may have moved).
func trainedOn(c *checkpoint.Training, name string) (trained string, same bool) {
	trained = c.Settings["dataset"]
	if trained == "" {
		trained = datasetOf(c)
	}
	kind, _ := cli.OwnDataKind(name)
	trainedKind, _ := cli.OwnDataKind(trained)
	return trained, kind == trainedKind && (kind != "" || name == trained)
}

// trainingPart returns the part of train, the training set of the data the checkpoint
// was trained on, that -split train or validation names. Without a held-out split
// (held nil) -split train is the whole training set. Otherwise the held-out split is
// made again as cmd/train made it (datasets.HashHoldOut in the validation domain with the
// run's fraction and split seed; datasets.HoldOut for a checkpoint from before), and the
// part kept must be the training set the checkpoint records (its size,
// the hash of its labels and, when the checkpoint has it, its content fingerprint):
// other data would score other examples than the run's.
func trainingPart(c *checkpoint.Training, ckpt, name, split string, held *heldOut, train datasets.Dataset) (datasets.Dataset, error) {
	if held == nil {
		return train, nil
	}
	var rest, val datasets.Dataset
	var err error
	if held.legacy {
		rest, val, err = datasets.HoldOut(train, held.fraction, held.seed)
	} else {
		rest, val, err = datasets.HashHoldOut(train, held.fraction, held.seed, datasets.DomainValidation)
	}
	if err != nil {
		return nil, exit.Usagef("-split %s: the validation split of %s (-validation %s -split-seed %d) cannot be made again on -dataset %s: %s",
			split, ckpt, held.setting, held.seed, name, strings.TrimPrefix(err.Error(), "datasets: "))
	}
	if want := c.Dataset; want.Size > 0 {
		got := training.DatasetFingerprint(want.Name, rest)
		if got.Size != want.Size || got.Labels != want.Labels {
			return nil, exit.Usagef("-split %s: the training part rebuilt from -dataset %s (%s examples, -validation %s -split-seed %d) is not the one %s was trained on (%s examples, labels sha256 %.12s…, here %.12s…): give the run's data (-dataset, -data) and its data flags",
				split, name, cli.Thousands(got.Size), held.setting, held.seed, ckpt, cli.Thousands(want.Size), want.Labels, got.Labels)
		}
		if want.Content != "" && got.Content != want.Content { // checkpoints before content_sha256 have none
			return nil, exit.Usagef("-split %s: the training part rebuilt from -dataset %s (-validation %s -split-seed %d) has the labels of the one %s was trained on but other examples (content sha256 %.12s…, here %.12s…): give the run's data (-dataset, -data) and its data flags",
				split, name, held.setting, held.seed, ckpt, want.Content, got.Content)
		}
	}
	if split == "validation" {
		return val, nil
	}
	return rest, nil
}

// datasetOf is the -dataset a checkpoint was trained on, by the name cmd/train records.
func datasetOf(c *checkpoint.Training) string {
	switch name := c.Dataset.Name; {
	case name == "mnist-embedded" || name == "mnist":
		return "mnist"
	case name == "cifar100-coarse":
		return "cifar100"
	case slices.Contains(datasetNames, name):
		return name
	}
	return "mnist"
}

// evaluate runs p over ds in blocks and tallies the metrics.
func evaluate(p *nn.Predictor, ds datasets.Dataset) (*report, error) {
	n, L, K := ds.Len(), p.ExampleLen(), p.NumClasses()
	r := &report{Examples: n, ClassExamples: make([]int, K), ConfusionMatrix: make([][]int, K)}
	for k := range r.ConfusionMatrix {
		r.ConfusionMatrix[k] = make([]int, K)
	}
	const block = 4096
	x := make([]float32, min(n, block)*L)
	labels := make([]int, min(n, block))
	logits := make([]float64, min(n, block)*K)
	loss := p.Model().Loss()
	var lossSum, ceSum float64
	for lo := 0; lo < n; lo += block {
		rows := min(block, n-lo)
		for i := range rows {
			labels[i] = ds.Example(lo+i, x[i*L:(i+1)*L])
		}
		if err := p.Logits(x[:rows*L], logits[:rows*K]); err != nil {
			return nil, err
		}
		for i := range rows {
			z, y := logits[i*K:(i+1)*K], labels[i]
			lossSum += loss.Value(z, y)
			if loss != nn.CrossEntropy {
				ceSum += nn.CrossEntropy.Value(z, y)
			}
			pred := nn.Argmax(z)
			r.ConfusionMatrix[y][pred]++
			r.ClassExamples[y]++
			if pred == y {
				r.Correct++
			}
		}
	}
	if n > 0 {
		r.Accuracy = float64(r.Correct) / float64(n)
		r.Loss = lossSum / float64(n)
	}
	if loss != nn.CrossEntropy {
		ce := ceSum / float64(max(n, 1))
		r.LossFunction, r.CrossEntropy = loss.String(), &ce
	}
	for k := range K {
		if r.ClassExamples[k] > 0 {
			a := float64(r.ConfusionMatrix[k][k]) / float64(r.ClassExamples[k])
			r.PerClassAccuracy = append(r.PerClassAccuracy, &a)
		} else {
			r.PerClassAccuracy = append(r.PerClassAccuracy, nil)
		}
	}
	return r, nil
}

func printText(w io.Writer, r *report, c *checkpoint.Training) error {
	var b strings.Builder
	fmt.Fprintf(&b, "model      %s (%s), from %s, trained on %s\n", r.Model, nn.DTypeOf(c.DType), r.Checkpoint, c.Dataset.Name)
	if c.EMA > 0 {
		fmt.Fprintf(&b, "parameters %s (-params raw|averaged)\n", cli.ParamsDescription(c))
	}
	fmt.Fprintf(&b, "data       %s, %s split, %s examples\n", r.Dataset, r.Split, cli.Thousands(r.Examples))
	fmt.Fprintf(&b, "accuracy   %.2f%% (%s correct)\n", 100*r.Accuracy, cli.Thousands(r.Correct))
	if r.CrossEntropy != nil {
		l, _ := nn.ParseLoss(r.LossFunction)
		fmt.Fprintf(&b, "loss       %.4f (mean %s, the loss it trained on)\n", r.Loss, l.Describe())
		fmt.Fprintf(&b, "           %.4f (mean cross-entropy)\n\n", *r.CrossEntropy)
	} else {
		fmt.Fprintf(&b, "loss       %.4f (mean cross-entropy)\n\n", r.Loss)
	}
	K := len(r.ClassExamples)
	width := 5
	for _, row := range r.ConfusionMatrix {
		for _, v := range row {
			width = max(width, len(fmt.Sprint(v))+1)
		}
	}
	// Each row names its true class, "3 cat" (the number alone where the name is the
	// number); the columns are the same classes by number.
	labels := make([]string, K)
	lw := len("class")
	for k := range K {
		labels[k] = strconv.Itoa(k)
		if k < len(r.ClassNames) && r.ClassNames[k] != labels[k] {
			labels[k] += " " + shorten(r.ClassNames[k], maxNameWidth)
		}
		lw = max(lw, utf8.RuneCountInString(labels[k]))
	}
	fmt.Fprintf(&b, "%-*s  examples  accuracy   predicted as (rows: true class; columns: predicted class by number)\n", lw, "class")
	fmt.Fprintf(&b, "%*s", lw+22, "")
	for k := range K {
		fmt.Fprintf(&b, "%*d", width, k)
	}
	b.WriteByte('\n')
	for k := range K {
		acc := "      —"
		if a := r.PerClassAccuracy[k]; a != nil {
			acc = fmt.Sprintf("%6.2f%%", 100**a)
		}
		fmt.Fprintf(&b, "%-*s  %8d  %8s  ", lw, labels[k], r.ClassExamples[k], acc)
		for _, v := range r.ConfusionMatrix[k] {
			fmt.Fprintf(&b, "%*d", width, v)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxNameWidth bounds the characters of a class name in the text report's rows.
const maxNameWidth = 24

// shorten cuts s to at most n characters, the last one an ellipsis when it was cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// classNames names the classes of the report's rows, the true classes of the data
// evaluated: the data's own names where it has them (datasets.ClassNames), else the
// names the checkpoint records for its training data (cli.ClassNames: else those of the
// built-in data set it was trained on, else the class numbers). When the data's names
// and the model's differ, a note says so: the model's class k is scored against the
// data's class k.
func classNames(c *checkpoint.Training, ds datasets.Dataset, classes int, stderr io.Writer) []string {
	names, named := cli.ClassNames(c, classes)
	data := datasets.ClassNames(ds)
	if len(data) != classes {
		return names
	}
	if named && !slices.Equal(names, data) {
		fmt.Fprintf(stderr, "evaluate: note: the data evaluated names its classes %s, the model's training data %s; the report names the data's, and the model's class k is scored as the data's class k\n",
			someNames(data), someNames(names))
	}
	return data
}

// someNames lists the first names: "cat, dog, emu" or "cat, dog, emu, … (12 in all)".
func someNames(names []string) string {
	const show = 4
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, … (%d in all)", strings.Join(names[:show], ", "), len(names))
}
