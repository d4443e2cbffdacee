package traincmd

import (
	"flag"
	"fmt"
	"io"
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
// datasets.HashHoldOut of the training set in the validation domain, seeded by
// -split-seed (the split -tune makes too):
//
//   - each example is held out when a SHA-256 of the split seed, its values and its
//     label falls below FRACTION, whatever the other examples are: adding or removing one
//     example of the training set moves no other, so neighbouring training sets give
//     parts trained on that differ by one example at most, and ε holds per training set
//     that was split (the unit of the budget store), not only per part trained on;
//   - the number held out is binomial, about FRACTION·N, and classes are not stratified
//     (each gives about FRACTION of its examples);
//   - the same data and split seed give the same split (-seed plays no part).
//
// A checkpoint records the rule (cli.SettingValidationSplit = content-hash). One written
// before it has -validation without the setting: its split was datasets.HoldOut's
// stratified one (one seeded permutation of the whole set, which moves hundreds of
// held-out examples when one example changes), and a resumed run makes that split again,
// with a warning that its ε is per part trained on only.
//
// Differential privacy covers the examples trained on: the sampling rate is q = b/n for
// the n examples kept, and the noise is calibrated and ε reported for that n. The
// validation accuracy is computed without noise, and choosing hyper-parameters by it is
// not covered by ε (-tune's search is).

// Evaluation split names, as the -json summary and the -metrics lines give them.
const (
	evalTest       = "test"
	evalValidation = "validation"
)

// settingValidation records -validation in the run's settings (with split-seed), so that
// a resumed run holds out the same examples and a changed value is refused.
const settingValidation = "validation"

func addValidationFlag(fs *flag.FlagSet, o *options) {
	fs.Float64Var(&o.validation, "validation", 0, "hold out this `FRACTION` in [0, 1) of the TRAINING set (each example by a hash of its own content, seeded by -split-seed: about, not exactly, this fraction, classes not stratified), train on the rest and evaluate on the held-out part instead of the test set, which is not used (nor read: MNIST's, Fashion-MNIST's and CIFAR's test files may be missing); ε accounts for the examples trained on. For tuning hyper-parameters without touching the test set (0: off, evaluate on the test set)")
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

// settingValidationSplit records the rule of the validation split, splitContentHash
// for the runs of this version (see the comment at the top of this file).
const (
	settingValidationSplit = cli.SettingValidationSplit
	splitContentHash       = cli.SplitContentHash
)

// validationSettings adds -validation, its split seed and its rule to the settings
// (nothing when off, so that the settings of runs without it are what they were; no rule
// for a run resumed from a checkpoint split by the stratified rule, so that its settings
// stay the checkpoint's).
func (o *options) validationSettings(s map[string]string) {
	if o.validation > 0 {
		s[settingValidation] = strconv.FormatFloat(o.validation, 'g', -1, 64)
		s["split-seed"] = strconv.FormatUint(o.own.SplitSeed, 10)
		if !o.legacyValidationSplit {
			s[settingValidationSplit] = splitContentHash
		}
	}
}

// applyCheckpointSplits takes the rules of the held-out splits from the checkpoint of a
// resumed run, so that it splits its data as the run did: the stratified rule of earlier
// versions for a checkpoint without the settings of the rules, with a warning (one line
// each) that its ε is per part trained on. An unknown rule is an error.
func (o *options) applyCheckpointSplits(c *checkpoint.Training, stderr io.Writer) error {
	if err := o.own.SplitFromSettings(c.Settings); err != nil {
		return fmt.Errorf("-resume %s: %w", o.resume, err)
	}
	_, held := c.Settings[settingValidation]
	rule, marked := c.Settings[settingValidationSplit]
	if marked && rule != splitContentHash {
		return fmt.Errorf("-resume %s: setting %s=%q: unknown (this version knows %s)", o.resume, settingValidationSplit, rule, splitContentHash)
	}
	o.legacyValidationSplit = held && !marked
	if o.own.LegacySplit {
		fmt.Fprintf(stderr, "train: warning: -resume %s: %s\n", o.resume, cli.LegacyTestSplitWarning)
	}
	if o.legacyValidationSplit {
		fmt.Fprintf(stderr, "train: warning: -resume %s: %s\n", o.resume, cli.LegacyValidationSplitWarning)
	}
	return nil
}

// splitValidation holds out o.validation of train (see the comment at the top of this
// file). Every class of train must keep at least one example to train on, and the
// validation part must not be empty; notes name the classes that give no validation
// example (their accuracy is not measured).
func splitValidation(o *options, train datasets.Dataset) (rest, val datasets.Dataset, notes []string, err error) {
	if o.legacyValidationSplit {
		rest, val, err = datasets.HoldOut(train, o.validation, o.own.SplitSeed)
	} else {
		rest, val, err = datasets.HashHoldOut(train, o.validation, o.own.SplitSeed, datasets.DomainValidation)
	}
	if err != nil {
		return nil, nil, nil, exit.Usagef("-validation %v: %s (choose another fraction or -split-seed)", o.validation,
			strings.TrimPrefix(strings.Replace(strings.Replace(err.Error(), "test fraction", "fraction", 1), "hold-out fraction", "fraction", 1), "datasets: "))
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
	var none []string
	for c := range restCounts {
		m := restCounts[c] + valCounts[c]
		if m == 0 {
			continue
		}
		if restCounts[c] == 0 {
			return nil, nil, nil, exit.Usagef("-validation %v: class %d has %s training examples and the split (split seed %d) holds out every one, leaving none to train on (choose a smaller fraction or another -split-seed)",
				o.validation, c, cli.Thousands(m), o.own.SplitSeed)
		}
		if valCounts[c] == 0 {
			none = append(none, fmt.Sprintf("%d (%s examples)", c, cli.Thousands(m)))
		}
	}
	if len(none) > 0 {
		notes = append(notes, fmt.Sprintf("-validation %g: no validation example of class %s; the validation accuracy does not measure it (a larger fraction or another -split-seed may hold some out)",
			o.validation, strings.Join(none, ", class ")))
	}
	return rest, val, notes, nil
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

// validationNote describes the validation split for the header: val of the trainN
// training examples held out.
func validationNote(o *options, val, trainN int) string {
	how := "each by a hash of its own content"
	if o.legacyValidationSplit {
		how = "by the stratified split of the checkpoint's version"
	}
	return fmt.Sprintf("-validation %g: %s of the %s training examples held out for validation, %s (split seed %d); the run evaluates on them, not on the test set, and trains on the other %s",
		o.validation, cli.Thousands(val), cli.Thousands(trainN), how, o.own.SplitSeed, cli.Thousands(trainN-val))
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

// checkResumedData refuses to resume the run of checkpoint c with a data flag (-scale,
// -label, -test-fraction, …) given on the command line that differs from the run's: the
// data would differ, and with the content-hash split so would the examples held out, so
// the trainer would refuse the training set without naming the flag. The message names
// it and the run's value.
func (o *options) checkResumedData(c *checkpoint.Training) error {
	now := map[string]string{}
	o.own.Settings(o.dataset, now)
	for _, name := range cli.DataFlagNames {
		old, recorded := c.Settings[name]
		if v, ok := now[name]; o.set[name] && recorded && ok && v != old {
			return exit.Usagef("-resume %s: the run was trained with -%s %s, this command asks for -%s %s; the data must stay the same (omit -%s to take the checkpoint's)",
				o.resume, name, old, name, v, name)
		}
	}
	return nil
}
