package traincmd

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// -validation FRACTION holds out part of the training set for tuning: the run trains on
// the rest and evaluates on the held-out part instead of the test set, so that
// hyper-parameters can be chosen without looking at the test set. The split is
// datasets.HoldOut (the one -test-fraction uses for csv: and images:) applied to the
// training set, seeded by -split-seed:
//
//   - the validation set gets v = round(FRACTION·N) of the N training examples;
//   - class c with m_c examples gives ⌊v·m_c/N⌋ of them, and the v − Σ⌊v·m_c/N⌋ left
//     over go one each to the classes with the largest remainders v·m_c mod N (ties to
//     the smaller label), so each class gives v·m_c/N rounded up or down;
//   - which examples of a class are held out is drawn from ChaCha8 seeded by
//     -split-seed (not by -seed): the same data and split seed give the same split.
//
// Differential privacy covers the examples trained on: the sampling rate is q = b/(N − v),
// and the noise is calibrated and ε reported for that n. The validation accuracy is
// computed without noise, and choosing hyper-parameters by it is not covered by ε.

// Evaluation split names, as the -json summary and the -metrics lines give them.
const (
	evalTest       = "test"
	evalValidation = "validation"
)

// settingValidation records -validation in the run's settings (with split-seed), so that
// a resumed run holds out the same examples and a changed value is refused.
const settingValidation = "validation"

func addValidationFlag(fs *flag.FlagSet, o *options) {
	fs.Float64Var(&o.validation, "validation", 0, "hold out this `FRACTION` in [0, 1) of the TRAINING set (stratified by label, seeded by -split-seed), train on the rest and evaluate on the held-out part instead of the test set, which is not used (nor read: MNIST's, Fashion-MNIST's and CIFAR's test files may be missing); ε accounts for the examples trained on. For tuning hyper-parameters without touching the test set (0: off, evaluate on the test set)")
}

// evalSplit names the split that the run evaluates on.
func (o *options) evalSplit() string {
	if o.validation > 0 {
		return evalValidation
	}
	return evalTest
}

func (o *options) validateValidation() error {
	if math.IsNaN(o.validation) || o.validation < 0 || o.validation >= 1 {
		return exit.Usagef("-validation %v: want a fraction in [0, 1) of the training set (0: off)", o.validation)
	}
	return nil
}

// validationSettings adds -validation and its split seed to the settings (nothing when
// off, so that the settings of runs without it are what they were).
func (o *options) validationSettings(s map[string]string) {
	if o.validation > 0 {
		s[settingValidation] = strconv.FormatFloat(o.validation, 'g', -1, 64)
		s["split-seed"] = strconv.FormatUint(o.own.SplitSeed, 10)
	}
}

// splitValidation holds out o.validation of train (see the comment at the top of this
// file). Every class of train must keep at least one training and give at least one
// validation example.
func splitValidation(o *options, train datasets.Dataset) (rest, val datasets.Dataset, err error) {
	rest, val, err = datasets.HoldOut(train, o.validation, o.own.SplitSeed)
	if err != nil {
		return nil, nil, exit.Usagef("-validation %v: %s", o.validation, strings.TrimPrefix(strings.Replace(err.Error(), "test fraction", "fraction", 1), "datasets: "))
	}
	// The two parts partition train, so a class's count in train is the sum of its
	// counts in them: no third pass over the data.
	restCounts, valCounts := classCounts(rest), classCounts(val)
	for len(restCounts) < len(valCounts) {
		restCounts = append(restCounts, 0)
	}
	for len(valCounts) < len(restCounts) {
		valCounts = append(valCounts, 0)
	}
	for c := range restCounts {
		m := restCounts[c] + valCounts[c]
		if m == 0 {
			continue
		}
		if valCounts[c] == 0 || restCounts[c] == 0 {
			return nil, nil, exit.Usagef("-validation %v: class %d has %s training examples; the split leaves %s of them for training and %s for validation, and both must be ≥ 1 (choose another fraction)",
				o.validation, c, cli.Thousands(m), cli.Thousands(restCounts[c]), cli.Thousands(valCounts[c]))
		}
	}
	return rest, val, nil
}

// classCounts counts the examples of each label of ds (indexed by label, up to
// NumClasses or the largest label).
func classCounts(ds datasets.Dataset) []int {
	counts := make([]int, ds.NumClasses())
	for _, l := range datasets.Labels(ds) {
		for l >= len(counts) {
			counts = append(counts, 0)
		}
		counts[l]++
	}
	return counts
}

// validationNote describes the validation split for the header.
func validationNote(o *options, trainN int) string {
	return fmt.Sprintf("-validation %g: %s of the %s training examples held out for validation (split seed %d); the run evaluates on them, not on the test set, and trains on the rest",
		o.validation, cli.Thousands(int(math.Round(o.validation*float64(trainN)))), cli.Thousands(trainN), o.own.SplitSeed)
}

// checkResumedValidation refuses to resume the run of checkpoint c with another
// -validation fraction or split seed than it was trained with: the examples held out
// would differ, and with them the training set. The message says what the run had.
func (o *options) checkResumedValidation(c *checkpoint.Training) error {
	had := map[string]string{}
	o.validationSettings(had)
	old, now := c.Settings[settingValidation], had[settingValidation]
	describe := func(fraction, seed string) string {
		if fraction == "" {
			return "no -validation (evaluated on the test set)"
		}
		return fmt.Sprintf("-validation %s -split-seed %s", fraction, seed)
	}
	if old != now || (old != "" && c.Settings["split-seed"] != had["split-seed"]) {
		return exit.Usagef("-resume %s: the run was trained with %s, this command asks for %s; the held-out examples must stay the same (omit -validation and -split-seed to take the checkpoint's)",
			o.resume, describe(old, c.Settings["split-seed"]), describe(now, had["split-seed"]))
	}
	return nil
}
