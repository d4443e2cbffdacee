package traincmd

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// A recipe is a named set of flag values (-recipe NAME). They are applied after the
// command line is parsed, to the flags the user did not give, and then count as given:
// every flag on the command line overrides the recipe's value, and the per-optimizer and
// per-model defaults (resolve) do not replace a recipe's value. The noise multiplier is
// calibrated for -epsilon (default 3) with -accountant as in any run.
//
// Two exceptions keep a recipe's values meaningful when the user changes the optimizer:
// with an -optimizer other than the recipe's, the recipe's -lr and optimizer flags
// (-momentum) are not applied (the chosen optimizer's defaults are), and with a
// non-private optimizer its privacy flags (-clip) are not applied either.
type recipe struct {
	name, help string
	// values are the flag values, in the order -help lists them.
	values [][2]string
	// provenance says where the values come from and how far they were tested here.
	provenance string
	// search is the -tune SPEC of -tune-recipe ("": none): every value of a searched flag
	// that the validation runs which chose the recipe tried (docs/results/utility.md),
	// the recipe's own among them, and the distribution of the number of trials. What a
	// spec leaves out is listed in docs/tuning.md.
	search string
}

// recipeTrials is the distribution of the number of trials of every recipe's search: a
// geometric one of mean 8 (docs/tuning.md#-tune-recipe says why).
const recipeTrials = "trials=geometric:mean=8"

// recipeProvisional is the provenance of a recipe not yet tuned on this code base.
const recipeProvisional = "provisional: T&B settings, not yet tuned here (no CIFAR-10 data on the machine where the others were tuned)"

// recipeTuned is the provenance of a recipe chosen on a validation split of the training
// set (docs/results/utility.md lists every run that chose it).
const recipeTuned = "tuned here on a validation split of the training set (docs/results/utility.md)"

// recipes is the table of -recipe values, in the order -help lists them. The Fashion-MNIST
// and MNIST values were chosen by validation accuracy on a held-out part of the training
// set (-validation; docs/results/utility.md has every run, the test accuracies over three
// seeds and the published numbers beside them). The CIFAR-10 values are Tramèr & Boneh's
// settings, untuned: no CIFAR-10 data was available to tune them on.
var recipes = []recipe{
	{name: "fashion-mnist-cnn", help: "end-to-end small residual CNN (res-cnn-28) on Fashion-MNIST, with an average of the parameters (EMA)",
		values: [][2]string{{"dataset", "fashion-mnist"}, {"model", "res-cnn-28"}, {"optimizer", "dp-sgd"},
			{"lr", "6"}, {"momentum", "0"}, {"clip", "1"}, {"batch", "2048"}, {"epochs", "40"}, {"ema", "0.999"}},
		provenance: recipeTuned,
		search:     "lr=3,4,6,9;loss=cross-entropy,focal:2;" + recipeTrials},
	{name: "fashion-mnist-scatter", help: "ScatterNet + GroupNorm features whitened by a dead-leaves prior (no data; computed once per machine, cached) + linear on Fashion-MNIST",
		values: [][2]string{{"dataset", "fashion-mnist"}, {"model", "scatter-prior-linear"}, {"optimizer", "dp-sgd"},
			{"lr", "8"}, {"momentum", "0.9"}, {"clip", "0.1"}, {"batch", "16384"}, {"epochs", "120"}},
		provenance: recipeTuned,
		search:     "lr=4,8,16;batch=8192,16384;epochs=100,120,200;" + recipeTrials},
	{name: "mnist-cnn", help: "end-to-end MNIST CNN (tanh) on the MNIST data (-data DIR; default the embedded sample)",
		values: [][2]string{{"dataset", "mnist"}, {"model", "cnn"}, {"activation", "tanh"}, {"optimizer", "dp-sgd"},
			{"lr", "3"}, {"momentum", "0"}, {"clip", "1"}, {"batch", "2048"}, {"epochs", "30"}},
		provenance: recipeTuned + "; this command's MNIST defaults, which none of the alternatives beat",
		search:     "lr=3,4;momentum=0,0.9;clip=0.1,1;epochs=30,40;ema=0,0.999;" + recipeTrials},
	{name: "mnist-scatter", help: "ScatterNet + GroupNorm + CNN (tanh) on the MNIST data (-data DIR; default the embedded sample)",
		values: [][2]string{{"dataset", "mnist"}, {"model", "scatter-cnn"}, {"activation", "tanh"}, {"optimizer", "dp-sgd"},
			{"lr", "1"}, {"momentum", "0.9"}, {"clip", "0.1"}, {"batch", "2048"}, {"epochs", "60"}},
		provenance: recipeTuned + " of the embedded sample (5 seeds a configuration)",
		search:     "lr=0.35,0.5,0.7,1,1.5,2,4;batch=512,1024,2048,4096;epochs=30,40,60,80;ema=0,0.999;clip=0.1,1;activation=tanh,relu;" + recipeTrials},
	{name: "cifar10-cnn", help: "Tramèr & Boneh's end-to-end CNN on CIFAR-10 (-data DIR required)",
		values: [][2]string{{"dataset", "cifar10"}, {"model", "cifar-tb-cnn"}, {"activation", "tanh"}, {"optimizer", "dp-sgd"},
			{"lr", "2"}, {"momentum", "0.9"}, {"clip", "0.1"}, {"batch", "2048"}, {"epochs", "30"}},
		provenance: recipeProvisional},
	{name: "cifar10-scatter", help: "ScatterNet + GroupNorm + CNN on CIFAR-10 (Tramèr & Boneh; -data DIR required)",
		values: [][2]string{{"dataset", "cifar10"}, {"model", "scatter-cnn"}, {"activation", "tanh"}, {"optimizer", "dp-sgd"},
			{"lr", "2"}, {"momentum", "0.9"}, {"clip", "0.1"}, {"batch", "2048"}, {"epochs", "30"}},
		provenance: recipeProvisional},
}

var recipeNames = func() []string {
	names := make([]string, len(recipes))
	for i, r := range recipes {
		names[i] = r.name
	}
	return names
}()

func lookupRecipe(name string) *recipe {
	for i := range recipes {
		if recipes[i].name == name {
			return &recipes[i]
		}
	}
	return nil
}

// recipeValue is the value recipe r gives flag name ("", false: none).
func (r *recipe) value(name string) (string, bool) {
	for _, v := range r.values {
		if v[0] == name {
			return v[1], true
		}
	}
	return "", false
}

// applyRecipe sets the flags of -recipe that the command line did not give and marks
// them given. It runs right after parsing, before resolve and validate.
func (o *options) applyRecipe(flags *flag.FlagSet) error {
	if o.recipe == "" {
		return nil
	}
	r := lookupRecipe(o.recipe)
	if r == nil {
		return exit.Usagef("-recipe %q: unknown (want %s)", o.recipe, strings.Join(recipeNames, ", "))
	}
	if o.resume != "" {
		return exit.Usagef("-recipe and -resume: give one (the checkpoint holds the run's settings)")
	}
	recipeOptimizer, _ := r.value("optimizer")
	optimizer := o.optimizer
	if !o.set["optimizer"] {
		optimizer = recipeOptimizer
	}
	spec := lookupOptimizer(optimizer)
	for _, v := range r.values {
		name, value := v[0], v[1]
		if o.set[name] {
			continue
		}
		if optimizer != recipeOptimizer && (name == "lr" || isOptimizerFlag(name)) {
			continue // the user's optimizer takes its own defaults
		}
		if spec != nil && !spec.private && contains(privacyFlags, name) {
			continue
		}
		if err := flags.Set(name, value); err != nil {
			return fmt.Errorf("-recipe %s: -%s %s: %w", r.name, name, value, err) // a bug in the table
		}
		o.set[name] = true
		o.fromRecipe = append(o.fromRecipe, name)
	}
	// The recipe's model must fit a -dataset of another shape.
	if o.set["dataset"] && !contains(o.fromCheckpoint, "dataset") {
		if shape := builtinShape[o.dataset]; shape != nil {
			if _, err := modelSpec(o, shape, 10); err != nil {
				return exit.Usagef("-recipe %s with -dataset %s: its -model %s does not fit %s images (%v); give a -model that does",
					r.name, o.dataset, o.model, cli.Shape(shape), err)
			}
		}
	}
	return nil
}

// applyTuneRecipe turns -tune-recipe into -tune with the recipe's search (after
// applyRecipe). Of the spec's keys, those given on the command line (or in -config) are
// fixed at their values and left out of the search, as they override the recipe's.
func (o *options) applyTuneRecipe() error {
	if !o.tuneRecipe {
		return nil
	}
	if o.set["tune"] {
		return exit.Usagef("-tune and -tune-recipe: give one (-tune-recipe runs -tune with the recipe's own search space; to search other values, give -tune SPEC with -recipe %s)", cmp.Or(o.recipe, "NAME"))
	}
	var searched []string
	for _, r := range recipes {
		if r.search != "" {
			searched = append(searched, r.name)
		}
	}
	if o.recipe == "" {
		return exit.Usagef("-tune-recipe without -recipe NAME: it searches the values a recipe's were chosen from; give one of %s", strings.Join(searched, ", "))
	}
	r := lookupRecipe(o.recipe) // known: applyRecipe ran
	if r.search == "" {
		return exit.Usagef("-tune-recipe with -recipe %s: that recipe has no search space (its values are %s); -tune-recipe takes %s, or give -tune SPEC yourself",
			r.name, r.provenance, strings.Join(searched, ", "))
	}
	var kept, fixed []string
	for _, part := range strings.Split(r.search, ";") {
		key, _, _ := strings.Cut(part, "=")
		if key != "trials" && key != "score-noise" && o.set[key] && !contains(o.fromRecipe, key) {
			fixed = append(fixed, key)
			continue
		}
		kept = append(kept, part)
	}
	o.tune = strings.Join(kept, ";")
	if len(kept) == 1 { // trials= only
		return exit.Usagef("-tune-recipe with -recipe %s: every flag it searches (%s) is given on the command line; leave one out to search it, or drop -tune-recipe",
			r.name, strings.Join(fixed, ", "))
	}
	o.tuneFixed = fixed
	return nil
}

func isOptimizerFlag(name string) bool {
	for _, f := range optimizerFlags {
		if f.name == name {
			return true
		}
	}
	return false
}

// recipeLine describes the recipe of the run for the reports ("": none).
func (o *options) recipeLine() string {
	r := lookupRecipe(o.recipe)
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%s (%s)", r.name, r.provenance)
}

// printRecipes writes the -help section that lists every -recipe with its values.
func printRecipes(w io.Writer) {
	fmt.Fprintf(w, "\nRecipes (-recipe NAME; the CIFAR-10 values are PROVISIONAL, not tuned here; any flag given overrides the recipe's value;\n"+
		"the noise is calibrated for -epsilon, default 3, with -accountant):\n")
	for _, r := range recipes {
		var vals []string
		for _, v := range r.values {
			vals = append(vals, "-"+v[0]+" "+v[1])
		}
		fmt.Fprintf(w, "  %-22s %s\n  %-22s   %s\n  %-22s   %s\n", r.name, r.help, "", strings.Join(vals, " "), "", r.provenance)
	}
}
