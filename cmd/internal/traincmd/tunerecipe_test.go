package traincmd

import (
	"context"
	"flag"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// Issue 44: the recipes that were chosen on a validation split carry that search, so
// that -tune-recipe can charge it.
var searchedRecipes = []string{"fashion-mnist-cnn", "fashion-mnist-scatter", "mnist-cnn", "mnist-scatter"}

// TestRecipeSearchSpaces: the spec each searched recipe expands to parses, draws its
// number of trials from a geometric distribution of mean 8, and holds the recipe's own
// value of every flag it searches (the table's value, or the flag's default where the
// recipe leaves the flag alone): the uncharged choice is one of the charged search's
// configurations. Every configuration is a valid run, checked before any data is read.
func TestRecipeSearchSpaces(t *testing.T) {
	geometric8, err := accountant.GeometricTrials(8)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range searchedRecipes {
		r := lookupRecipe(name)
		if r == nil || r.search == "" {
			t.Fatalf("-recipe %s: no search space", name)
		}
		spec, err := parseTuneSpec(r.search)
		if err != nil {
			t.Errorf("-recipe %s: its spec %q: %v", name, r.search, err)
			continue
		}
		if spec.trials.String() != geometric8.String() || math.Abs(spec.trials.Mean()-8) > 1e-12 {
			t.Errorf("-recipe %s: trials %v, want %v", name, spec.trials, geometric8)
		}
		defaults := newFlagSet(&options{})
		for _, p := range spec.params {
			want, ok := r.value(p.name)
			if !ok {
				want = defaults.Lookup(p.name).DefValue
			}
			if !slices.ContainsFunc(p.values, func(v string) bool { return sameValue(v, want) }) {
				t.Errorf("-recipe %s: the search's %s ∈ %v lacks the recipe's own %s", name, p.name, p.values, want)
			}
		}
		args := []string{"-recipe", name, "-tune-recipe", "-no-checkpoint"}
		o, _ := parseRecipe(t, args...)
		if err := o.applyTuneRecipe(); err != nil || o.tune != r.search {
			t.Fatalf("-recipe %s -tune-recipe: -tune %q, err %v; want %q", name, o.tune, err, r.search)
		}
		s := &tuneSearch{spec: spec, base: o, args: args}
		for _, c := range spec.configs() {
			to, err := s.trialOptions(c, 0, 1)
			if err != nil {
				t.Errorf("-recipe %s: configuration %s: %v", name, spec.describe(c), err)
				continue
			}
			if d, _ := r.value("dataset"); to.dataset != d {
				t.Errorf("-recipe %s: configuration %s trains on %s", name, spec.describe(c), to.dataset)
			}
		}
	}
	for _, r := range recipes {
		if r.search != "" && !slices.Contains(searchedRecipes, r.name) {
			t.Errorf("-recipe %s has a search space this test does not check", r.name)
		}
	}
}

// TestTuneRecipeRefuses: -tune-recipe without a recipe, with a recipe that has no search
// (the CIFAR-10 ones, untuned), beside -tune, or with every searched flag given exits 2
// before anything is trained, naming the problem.
func TestTuneRecipeRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-tune-recipe"}, "-tune-recipe without -recipe NAME"},
		{[]string{"-tune-recipe", "-model", "logreg"}, "give one of fashion-mnist-cnn, fashion-mnist-scatter, mnist-cnn, mnist-scatter"},
		{[]string{"-recipe", "cifar10-cnn", "-tune-recipe"}, "-recipe cifar10-cnn: that recipe has no search space"},
		{[]string{"-recipe", "cifar10-scatter", "-tune-recipe"}, "-recipe cifar10-scatter: that recipe has no search space"},
		{[]string{"-recipe", "mnist-cnn", "-tune-recipe", "-tune", "lr=1,2;trials=geometric:mean=2"}, "-tune and -tune-recipe: give one"},
		{[]string{"-recipe", "mnist-cnn", "-tune-recipe", "-lr", "1", "-momentum", "0", "-clip", "1", "-epochs", "1", "-ema", "0"}, "every flag it searches (lr, momentum, clip, epochs, ema) is given"},
		{[]string{"-recipe", "mnist-cnn", "-tune-recipe", "-accountant", "pld"}, "pld"},
	} {
		args := append(slices.Clone(c.args), "-no-checkpoint")
		code, _, stderr := runCmd(t, context.Background(), args...)
		if code != exit.Usage || !strings.Contains(stderr, c.want) {
			t.Errorf("train %s: exit %d, stderr %q; want exit 2 naming %q", strings.Join(args, " "), code, stderr, c.want)
		}
		if strings.Contains(stderr, "tune: trial") {
			t.Errorf("train %s: a trial ran before the refusal", strings.Join(args, " "))
		}
	}
}

// TestTuneRecipeSearch: -recipe mnist-cnn -tune-recipe through the command, made tiny by
// fixing all but the learning rate on the command line (logistic regression, one epoch
// at batch 512), runs the recipe's search over lr ∈ {3, 4} with geometric trials of
// mean 8, calibrates the noise so that the whole search's ε is -epsilon's 3 (checked by
// searchEpsilon, written out independently of the code under test), and records the
// search in the budget store as one settled spend at that ε, as the data set's only run.
func TestTuneRecipeSearch(t *testing.T) {
	store := t.TempDir()
	ckpt := filepath.Join(t.TempDir(), "best.ckpt")
	args := []string{"-recipe", "mnist-cnn", "-tune-recipe", "-model", "logreg", "-epochs", "1", "-batch", "512",
		"-momentum", "0", "-clip", "1", "-ema", "0", "-seed", "5", "-json", "-budget-store", store, "-checkpoint", ckpt}
	code, out, stderr := runCmd(t, context.Background(), args...)
	if code != exit.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := decodeTune(t, out)
	if !strings.Contains(stderr, "-tune 'lr=3,4;trials=geometric:mean=8'") || !strings.Contains(stderr, "left out of it, as given on the command line: -momentum, -clip, -epochs, -ema") {
		t.Errorf("stderr does not name the recipe's search and what the command line fixed:\n%s", stderr)
	}
	if len(s.Best) != 1 || !slices.Contains([]string{"3", "4"}, s.Best["lr"]) {
		t.Errorf("best %v: not from lr ∈ {3, 4}", s.Best)
	}
	d, _ := accountant.GeometricTrials(8)
	want, _ := searchEpsilon(t, 8000-s.ValidationN, d, [][2]int{{512, 1}}, s.NoiseMultiplier, defaultScoreNoise, 1e-5)
	if math.Abs(s.Epsilon-want) > 1e-12*want || !(s.Epsilon <= 3) || !(s.Epsilon > 2.99) {
		t.Errorf("search ε %v at z = %v; want %v, at most -epsilon 3 and within 0.01 of it", s.Epsilon, s.NoiseMultiplier, want)
	}
	st, err := budget.Open(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds := onlyDataset(t, store)
	_, runs, err := st.Runs(ds.Fingerprint, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Runs != 1 || ds.Unsettled != 0 || ds.Method != "rdp" || math.Abs(ds.Epsilon-want) > 1e-9*want || len(runs) != 1 {
		t.Fatalf("store after the search: %+v, runs %+v; want one settled run of ε = %v (rdp)", ds, runs, want)
	}
	if r := runs[0]; r.Tool != "train -tune" || !r.Settled || !strings.Contains(r.Command, "-tune-recipe") {
		t.Errorf("the search's record: tool %q, settled %v, command %q", r.Tool, r.Settled, r.Command)
	}
}

// TestTuneOverRecipeValues: with -recipe, a plain -tune may search a flag the recipe sets
// (the recipe's value gives way to the search's); a flag the user gives still may not be
// searched as well.
func TestTuneOverRecipeValues(t *testing.T) {
	args := []string{"-recipe", "mnist-cnn", "-model", "logreg", "-epochs", "1", "-batch", "512", "-noise", "3", "-no-checkpoint", "-tune", "lr=1,2;trials=geometric:mean=2"}
	o := &options{}
	fs := newFlagSet(o)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if err := o.applyRecipe(fs); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareTune(o, args); err != nil {
		t.Errorf("-recipe mnist-cnn -tune lr=…: %v", err)
	}
	code, _, stderr := runCmd(t, context.Background(), append(args, "-lr", "2")...)
	if code != exit.Usage || !strings.Contains(stderr, "give the values in one place") {
		t.Errorf("-lr beside -tune lr=… with a recipe: exit %d\n%s", code, stderr)
	}
}
