package traincmd

import (
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
}

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
		provenance: recipeTuned},
	{name: "fashion-mnist-scatter", help: "ScatterNet + GroupNorm features whitened by a dead-leaves prior (no data; computed once per machine, cached) + linear on Fashion-MNIST",
		values: [][2]string{{"dataset", "fashion-mnist"}, {"model", "scatter-prior-linear"}, {"optimizer", "dp-sgd"},
			{"lr", "8"}, {"momentum", "0.9"}, {"clip", "0.1"}, {"batch", "16384"}, {"epochs", "120"}},
		provenance: recipeTuned},
	{name: "mnist-cnn", help: "end-to-end MNIST CNN (tanh) on the MNIST data (-data DIR; default the embedded sample)",
		values: [][2]string{{"dataset", "mnist"}, {"model", "cnn"}, {"activation", "tanh"}, {"optimizer", "dp-sgd"},
			{"lr", "3"}, {"momentum", "0"}, {"clip", "1"}, {"batch", "2048"}, {"epochs", "30"}},
		provenance: recipeTuned + "; this command's MNIST defaults, which none of the alternatives beat"},
	{name: "mnist-scatter", help: "ScatterNet + GroupNorm + CNN (tanh) on the MNIST data (-data DIR; default the embedded sample)",
		values: [][2]string{{"dataset", "mnist"}, {"model", "scatter-cnn"}, {"activation", "tanh"}, {"optimizer", "dp-sgd"},
			{"lr", "1"}, {"momentum", "0.9"}, {"clip", "0.1"}, {"batch", "2048"}, {"epochs", "60"}},
		provenance: recipeTuned + " of the embedded sample (5 seeds a configuration)"},
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
