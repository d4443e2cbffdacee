package traincmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/internal/cpupath"
	"github.com/privtrain/privtrain/training"
	"github.com/privtrain/privtrain/tuning"
)

// -tune SPEC runs a private random search (docs/tuning.md): K trials, K drawn from the
// distribution the spec names, each training with values drawn uniformly from the spec's
// lists on the training set minus a validation part (-validation FRACTION, held out by
// tuneSplit) and scored on that part by its accuracy with Gaussian noise on the count of
// correct predictions; the best trial is
// released. Papernot and Steinke (ICLR 2022) bound the whole search's Rényi DP from one
// trial's (accountant.TuningRDP), so the ε printed covers the release of the best trial's
// model, values and noisy score, the choice among the trials included.
//
// The search itself (the draws, the trials, the noisy selection, the accounting) is
// package tuning; this file parses the spec, turns each trial's values into a trainer
// from the command line, and prints.
//
// SPEC is `;`-separated `KEY=VALUES`:
//
//	lr=0.5,1,2;clip=0.5,1;trials=geometric:mean=8;score-noise=10
//
//   - a flag of tuneKeys with a comma-separated list of values (each trial draws one,
//     uniformly, independently of the other keys);
//   - trials=DIST, required: geometric:mean=M (or :gamma=G, or geometric:M),
//     logarithmic:gamma=G, negbin:eta=E,gamma=G (truncated negative binomial, η > −1),
//     poisson:mean=M (or poisson:M);
//   - score-noise=σ, the standard deviation of the noise on the count of correct
//     validation predictions (default defaultScoreNoise).
//
// Privacy flags with -tune: every trial uses one noise multiplier z. -noise z (or a
// noise= list) fixes it and the search's ε is reported; otherwise -epsilon (default 3) is
// the budget of the WHOLE search and z is calibrated so that the search meets it. With
// noise= and an explicit -epsilon, a search above -epsilon is refused.

// defaultScoreNoise is σ of the Gaussian noise on a trial's count of correct validation
// predictions: ±1.25 % accuracy (one σ) on 800 validation examples (-validation 0.1 of
// the embedded MNIST sample), ±0.17 % on 6,000 (0.1 of MNIST).
const defaultScoreNoise = 10.0

// defaultTuneValidation is the -validation fraction of a search that does not give one.
const defaultTuneValidation = 0.1

// maxTuneConfigs bounds the number of combinations of a spec's values, each of which is
// checked before the search starts.
const maxTuneConfigs = 4096

// tuneKeys are the flags a spec may search over.
var tuneKeys = []string{"lr", "clip", "batch", "epochs", "noise", "momentum", "ema", "lr-schedule", "warmup-steps", "optimizer", "activation", "loss"}

// tuneParam is one searched flag and its values, as given.
type tuneParam struct {
	name   string
	values []string
}

// tuneSpec is a parsed -tune SPEC.
type tuneSpec struct {
	params     []tuneParam
	trials     accountant.Trials
	trialsText string // as given, for the report
	scoreNoise float64
}

func tuneUsage(spec, why string) error {
	return exit.Usagef("-tune %q: %s (want e.g. -tune 'lr=0.5,1,2;clip=0.5,1;trials=geometric:mean=8'; see docs/tuning.md)", spec, why)
}

// parseTuneSpec parses SPEC (see the comment at the top of this file).
func parseTuneSpec(spec string) (*tuneSpec, error) {
	s := &tuneSpec{scoreNoise: defaultScoreNoise}
	seen := map[string]bool{}
	haveTrials := false
	for _, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, value, ok := strings.Cut(part, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" {
			return nil, tuneUsage(spec, fmt.Sprintf("%q is not KEY=VALUES", part))
		}
		if seen[key] {
			return nil, tuneUsage(spec, fmt.Sprintf("%s is given twice", key))
		}
		seen[key] = true
		switch {
		case key == "trials":
			d, err := parseTrials(value)
			if err != nil {
				return nil, tuneUsage(spec, err.Error())
			}
			s.trials, s.trialsText, haveTrials = d, value, true
		case key == "score-noise":
			v, err := strconv.ParseFloat(value, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, tuneUsage(spec, fmt.Sprintf("score-noise=%s: want a finite standard deviation > 0 (a count of validation examples)", value))
			}
			s.scoreNoise = v
		case slices.Contains(tuneKeys, key):
			p := tuneParam{name: key}
			for _, v := range strings.Split(value, ",") {
				v = strings.TrimSpace(v)
				if v == "" {
					return nil, tuneUsage(spec, fmt.Sprintf("%s=%s: an empty value", key, value))
				}
				if slices.Contains(p.values, v) {
					return nil, tuneUsage(spec, fmt.Sprintf("%s lists %s twice", key, v))
				}
				p.values = append(p.values, v)
			}
			s.params = append(s.params, p)
		default:
			return nil, tuneUsage(spec, fmt.Sprintf("unknown key %q (want trials, score-noise or one of %s)", key, strings.Join(tuneKeys, ", ")))
		}
	}
	if !haveTrials {
		return nil, tuneUsage(spec, "no trials=DIST: say how the number of trials is drawn (geometric:mean=M, logarithmic:gamma=G, negbin:eta=E,gamma=G or poisson:mean=M)")
	}
	if len(s.params) == 0 {
		return nil, tuneUsage(spec, "no values to search: give at least one KEY=V1,V2,… with KEY one of "+strings.Join(tuneKeys, ", "))
	}
	n := 1
	for _, p := range s.params {
		n *= len(p.values)
		if n > maxTuneConfigs {
			return nil, tuneUsage(spec, fmt.Sprintf("more than %d combinations of values; search fewer", maxTuneConfigs))
		}
	}
	return s, nil
}

// parseTrials parses the distribution of the number of trials.
func parseTrials(s string) (accountant.Trials, error) {
	name, args, _ := strings.Cut(s, ":")
	kv := map[string]float64{}
	var bare []float64
	if args != "" {
		for _, a := range strings.Split(args, ",") {
			k, v, ok := strings.Cut(a, "=")
			if !ok {
				v, k = k, ""
			}
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return accountant.Trials{}, fmt.Errorf("trials=%s: %q is not a number", s, v)
			}
			k = strings.TrimSpace(k)
			if k == "" {
				bare = append(bare, x)
				continue
			}
			if _, dup := kv[k]; dup {
				return accountant.Trials{}, fmt.Errorf("trials=%s: %s given twice", s, k)
			}
			kv[k] = x
		}
	}
	// take returns the parameters named in want, and refuses any other.
	take := func(want ...string) ([]float64, bool, error) {
		out := make([]float64, len(want))
		n := 0
		for i, w := range want {
			if v, ok := kv[w]; ok {
				out[i], n = v, n+1
			}
		}
		if n != len(kv) || len(bare) > 0 || n == 0 {
			return nil, false, fmt.Errorf("trials=%s: %s takes %s", s, name, strings.Join(want, "= or ")+"=")
		}
		return out, true, nil
	}
	var (
		d   accountant.Trials
		err error
	)
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "geometric":
		if len(bare) == 1 && len(kv) == 0 {
			d, err = accountant.GeometricTrials(bare[0])
			break
		}
		if m, ok := kv["mean"]; ok && len(kv) == 1 && len(bare) == 0 {
			d, err = accountant.GeometricTrials(m)
			break
		}
		v, _, e := take("gamma")
		if e != nil {
			return d, fmt.Errorf("trials=%s: geometric takes mean=M (M > 1) or gamma=G", s)
		}
		d, err = accountant.NegativeBinomialTrials(1, v[0])
	case "poisson":
		if len(bare) == 1 && len(kv) == 0 {
			d, err = accountant.PoissonTrials(bare[0])
			break
		}
		v, _, e := take("mean")
		if e != nil {
			return d, fmt.Errorf("trials=%s: poisson takes mean=M (or poisson:M), M ≥ 1", s)
		}
		d, err = accountant.PoissonTrials(v[0])
	case "logarithmic":
		v, _, e := take("gamma")
		if e != nil {
			return d, fmt.Errorf("trials=%s: logarithmic takes gamma=G, G in (0, 1)", s)
		}
		d, err = accountant.LogarithmicTrials(v[0])
	case "negbin":
		_, hasEta := kv["eta"]
		_, hasGamma := kv["gamma"]
		if !hasEta || !hasGamma || len(kv) != 2 || len(bare) > 0 {
			return d, fmt.Errorf("trials=%s: negbin takes eta=E,gamma=G (η > −1, γ in (0, 1))", s)
		}
		d, err = accountant.NegativeBinomialTrials(kv["eta"], kv["gamma"])
	default:
		return d, fmt.Errorf("trials=%s: unknown distribution %q (want geometric, logarithmic, negbin or poisson)", s, name)
	}
	if err != nil {
		return d, fmt.Errorf("trials=%s: %s", s, strings.TrimSuffix(strings.TrimPrefix(err.Error(), "accountant: "), ": "+accountant.ErrInvalidParameter.Error()))
	}
	return d, nil
}

// tuneConfig is one combination of the spec's values: value[i] for params[i].
type tuneConfig = tuning.Config

// space returns the spec's search space.
func (s *tuneSpec) space() tuning.Space {
	sp := make(tuning.Space, len(s.params))
	for i, p := range s.params {
		sp[i] = tuning.Param{Name: p.name, Values: p.values}
	}
	return sp
}

// configs returns every combination of the spec's values.
func (s *tuneSpec) configs() []tuneConfig { return s.space().Configs() }

// describe writes a configuration as "lr=1 clip=0.5".
func (s *tuneSpec) describe(c tuneConfig) string { return s.space().Describe(c) }

// tuneSearch is a planned search: the spec, the data, the noise multiplier and the
// accounting.
type tuneSearch struct {
	spec     *tuneSpec
	base     *options
	args     []string
	trainSet datasets.Dataset
	valSet   datasets.Dataset
	dataName string
	dataFP   string // the content fingerprint of the whole training set (budget.go)
	notes    []string
	seeded   bool
	z        float64 // the noise multiplier of every trial (noiseGiven: per config)
	zGiven   bool    // -noise or noise= fixes z; otherwise z is calibrated for the search
	acc      *tuning.Accounting
}

// TuneSpend is what a search spends, for the budget store: the search's Rényi DP curve
// (Orders, RDP: the best trial's release, the choice included; it composes with the data
// set's other runs by adding per order), the δ of its reports and a one-line description.
type TuneSpend struct {
	Orders, RDP []float64
	Delta       float64
	Description string
}

// Spend returns the search's spend for the budget store.
func (s *tuneSearch) Spend() TuneSpend {
	return TuneSpend{
		Orders: slices.Clone(s.acc.Orders), RDP: slices.Clone(s.acc.SearchRDP), Delta: s.base.delta,
		Description: fmt.Sprintf("train -tune %q: private random search, trials %v, score noise σ = %g; ε = %.4g at δ = %g (Papernot & Steinke 2022)",
			s.base.tune, s.spec.trials, s.spec.scoreNoise, s.acc.Search.Epsilon, s.base.delta),
	}
}

// tuneConflicts are flags that a search does not take, and why.
var tuneConflicts = []struct{ flag, why string }{
	{"resume", "a search starts its trials afresh"},
	{"checkpoint-every", "only the best trial is written, at the end"},
	{"metrics", "the trials' epochs are not logged"},
	{"plot", "the trials' epochs are not plotted"},
}

// tune runs the search of o.tune (dispatched from run).
func tune(ctx context.Context, o *options, args []string, start time.Time, stdout, stderr io.Writer) (int, error) {
	// The search writes -checkpoint at its end: it holds the path's lock for its whole
	// life and obeys the overwrite rules, as train does.
	lock, err := lockCheckpoint(o)
	if err != nil {
		return 0, err
	}
	defer lock.Unlock()
	if err := checkTarget(o, nil, stderr); err != nil {
		return 0, err
	}
	s, err := prepareTune(o, args)
	if err != nil {
		return 0, err
	}
	s.header(stderr)
	spend, err := reserveSearch(o, s.dataFP, s.Spend(), stderr) // budget.go: before the first trial
	if err != nil {
		return 0, err
	}
	defer spend.settleSearch()
	return s.run(ctx, start, stdout, stderr)
}

// prepareTune checks the search of o.tune (args: the command line), loads and splits the
// data and plans the privacy: everything before the first trial.
func prepareTune(o *options, args []string) (*tuneSearch, error) {
	spec, err := parseTuneSpec(o.tune)
	if err != nil {
		return nil, err
	}
	for _, c := range tuneConflicts {
		if o.set[c.flag] {
			return nil, exit.Usagef("-%s with -tune: not supported (%s)", c.flag, c.why)
		}
	}
	for _, p := range spec.params {
		if o.set[p.name] && !contains(o.fromRecipe, p.name) { // a recipe's value gives way to the search's
			return nil, exit.Usagef("-%s and -tune %s=…: give the values in one place", p.name, p.name)
		}
	}
	if o.accountant != "rdp" {
		return nil, exit.Usagef("-accountant %s with -tune: the search's bound (Papernot & Steinke 2022) is a Rényi DP theorem; omit -accountant", o.accountant)
	}
	if !o.set["validation"] {
		o.validation = defaultTuneValidation
		args = append(slices.Clone(args), "-validation", strconv.FormatFloat(defaultTuneValidation, 'g', -1, 64))
	} else if o.validation == 0 {
		return nil, exit.Usagef("-validation 0 with -tune: the trials are scored on a validation split of the training set; give a fraction in (0, 1)")
	}
	s := &tuneSearch{spec: spec, base: o, args: args, seeded: o.set["seed"]}
	s.zGiven = o.set["noise"] || slices.ContainsFunc(spec.params, func(p tuneParam) bool { return p.name == "noise" })
	if o.set["noise"] {
		s.z = o.noise
	}
	if !s.zGiven && (!(o.epsilon > 0) || math.IsInf(o.epsilon, 0)) {
		return nil, exit.Usagef("-epsilon %v: want a finite ε > 0, the budget of the whole search", o.epsilon)
	}
	// Every configuration must be a valid run before anything is loaded.
	configs := spec.configs()
	for _, c := range configs {
		if _, err := s.trialOptions(c, 0, 1); err != nil {
			return nil, err
		}
	}
	base, err := s.trialOptions(configs[0], 0, 1)
	if err != nil {
		return nil, err
	}
	if o.checkpoint == "" && !o.noCheckpoint { // before any data is read or ε spent
		return nil, exit.Usagef("-tune without -checkpoint FILE: the search spends its ε on the data set and would keep no model; give -checkpoint FILE to keep the best trial's model, or -no-checkpoint to run it for its numbers only")
	}
	if err := checkWritable("checkpoint", o.checkpoint); err != nil {
		return nil, err
	}
	train, _, name, notes, err := loadData(base)
	if err != nil {
		return nil, err
	}
	s.dataName, s.dataFP = name, datasets.ContentFingerprint(train) // before the split: the whole set is charged
	if s.trainSet, s.valSet, err = tuneSplit(train, base.validation, base.own.SplitSeed); err != nil {
		return nil, err
	}
	s.notes = append(notes, fmt.Sprintf("-validation %g with -tune: %s of the %s training examples held out for validation, each by a hash of its own content (split seed %d), so that neighbouring data sets split alike; the trials train on the other %s",
		base.validation, cli.Thousands(s.valSet.Len()), cli.Thousands(train.Len()), base.own.SplitSeed, cli.Thousands(s.trainSet.Len())))
	if err := s.plan(configs); err != nil {
		return nil, err
	}
	return s, nil
}

// settingTuneTrial marks the settings of a search's trials (its value: the trial's
// values, e.g. "lr=2 clip=1"). A plain run's settings lack it, so resuming a trial with
// train -resume is refused as a mismatch of settings: the trial's ledger counts its own
// steps, not the search's, and a resumed run would report less than was spent.
const settingTuneTrial = "tune-trial"

// tuneSplit holds out about fraction of ds for validation, each example by its own
// content (tuning.Split: the split -validation makes too, validation.go), so that
// neighbouring data sets split alike.
func tuneSplit(ds datasets.Dataset, fraction float64, seed uint64) (train, val datasets.Dataset, err error) {
	train, val, err = tuning.Split(ds, fraction, seed)
	if e := (*tuning.EmptyPartError)(nil); errors.As(err, &e) {
		return nil, nil, exit.Usagef("-validation %g with -tune: of the %s training examples, %s fall in the validation part and %s in the trained-on part; both must be ≥ 1 (choose another fraction or -split-seed)",
			fraction, cli.Thousands(e.Examples), cli.Thousands(e.Held), cli.Thousands(e.Train))
	}
	return train, val, err
}

// trialOptions returns the options of a trial with the values c: the command line again
// with c's values set, and the trial's noise multiplier z (0: as the configuration
// gives it) and seed (used when the search is seeded).
func (s *tuneSearch) trialOptions(c tuneConfig, z float64, seed uint64) (*options, error) {
	o := &options{}
	fs := newFlagSet(o)
	if err := fs.Parse(s.args); err != nil {
		return nil, err // parsed once already
	}
	for i, v := range c {
		name := s.spec.params[i].name
		if err := fs.Set(name, v); err != nil {
			return nil, exit.Usagef("-tune %s=%s: %s", name, v, exit.OneLine(err.Error()))
		}
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if err := o.applyRecipe(fs); err != nil {
		return nil, err
	}
	if z > 0 {
		o.noise = z
		o.set["noise"] = true
	}
	if !o.set["noise"] {
		o.noise, o.set["noise"] = 1, true // a placeholder until z is calibrated, to validate the rest
	}
	delete(o.set, "epsilon") // -epsilon is the search's budget, not the trial's
	if s.seeded {
		o.seed = seed
	}
	o.resolve()
	if !private(o.optimizer) {
		return nil, exit.Usagef("-tune %s: -optimizer %s is not private; a search needs private trials (dp-sgd, dp-adam, …)", s.spec.describe(c), o.optimizer)
	}
	if err := o.validate(); err != nil {
		var ue *exit.UsageError
		if errors.As(err, &ue) && len(c) > 0 {
			return nil, exit.Usagef("-tune %s: %s", s.spec.describe(c), ue.Msg)
		}
		return nil, err
	}
	return o, nil
}

// trialPlans returns the distinct plans of configs, z given by the configuration when
// it fixes it (noise=, -noise) and 0 otherwise.
func (s *tuneSearch) trialPlans(configs []tuneConfig) ([]tuning.Plan, error) {
	n := s.trainSet.Len()
	var plans []tuning.Plan
	for _, c := range configs {
		o, err := s.trialOptions(c, 0, 1)
		if err != nil {
			return nil, err
		}
		p := tuning.Plan{BatchSize: o.batch, Epochs: o.epochs}
		if s.zGiven {
			p.NoiseMultiplier = o.noise
		}
		if p.BatchSize > n {
			return nil, exit.Usagef("-tune %s: -batch %d is larger than the training set (%s examples after the validation split)", s.spec.describe(c), p.BatchSize, cli.Thousands(n))
		}
		if !slices.Contains(plans, p) {
			plans = append(plans, p)
		}
	}
	return plans, nil
}

// plan fixes z (given, or calibrated for the search's budget) and the accounting.
func (s *tuneSearch) plan(configs []tuneConfig) error {
	o := s.base
	plans, err := s.trialPlans(configs)
	if err != nil {
		return err
	}
	p := tuning.Privacy{Trials: s.spec.trials, Examples: s.trainSet.Len(), Plans: plans, ScoreNoise: s.spec.scoreNoise, Delta: o.delta, Orders: accountant.OrdersUpTo(256)}
	if s.zGiven {
		s.acc, err = p.At(s.z)
	} else {
		// -epsilon is the budget of the whole search. The score's noise alone sets a floor.
		s.acc, err = p.Calibrate(o.epsilon)
		if f := (*tuning.ScoreFloorError)(nil); errors.As(err, &f) {
			return exit.Usagef("-epsilon %g with -tune: the noisy validation scores alone spend ε = %.4g over a search with trials %v, however much noise the training takes; raise -epsilon or score-noise=σ (now %g)", o.epsilon, f.Floor, s.spec.trials, s.spec.scoreNoise)
		}
		if err == nil {
			s.z = s.acc.NoiseMultiplier
		}
	}
	if err != nil {
		return err
	}
	if s.zGiven && o.set["epsilon"] && s.acc.Search.Epsilon > o.epsilon {
		return exit.Usagef("-tune: the search spends ε = %.4g at δ = %g, above -epsilon %g; raise the noise, lower the expected number of trials, or raise -epsilon", s.acc.Search.Epsilon, o.delta, o.epsilon)
	}
	return nil
}

// header prints the search's plan and its privacy before the first trial.
func (s *tuneSearch) header(w io.Writer) {
	var values []string
	for _, p := range s.spec.params {
		values = append(values, p.name+" ∈ {"+strings.Join(p.values, ", ")+"}")
	}
	if s.base.tuneRecipe {
		fixed := ""
		if len(s.base.tuneFixed) > 0 {
			fixed = fmt.Sprintf("; left out of it, as given on the command line: -%s", strings.Join(s.base.tuneFixed, ", -"))
		}
		fmt.Fprintf(w, "tune: -recipe %s -tune-recipe: the search its values were chosen from, -tune '%s'%s\n", s.base.recipe, s.base.tune, fixed)
	}
	fmt.Fprintf(w, "tune: private random search over %s; number of trials %v; data %s: %s train / %s validation examples\n",
		strings.Join(values, ", "), s.spec.trials, s.dataName, cli.Thousands(s.trainSet.Len()), cli.Thousands(s.valSet.Len()))
	for _, n := range s.notes {
		fmt.Fprintf(w, "data: %s\n", n)
	}
	noise := fmt.Sprintf("noise multiplier z = %.5g in every trial, calibrated so that the whole search spends at most ε = %g", s.z, s.base.epsilon)
	if s.zGiven {
		noise = "noise multiplier as given"
		if s.z > 0 {
			noise = fmt.Sprintf("noise multiplier z = %.5g (given)", s.z)
		}
	}
	fmt.Fprintf(w, "tune: %s; score: validation accuracy from the count of correct predictions + N(0, %g²)\n", noise, s.spec.scoreNoise)
	fmt.Fprintf(w, "privacy: each trial's training ε ≤ %.4g (the ε its line below prints), with its noisy score ε ≤ %.4g; the search (the best trial's model, values and noisy score, the choice included): ε = %.4g at δ = %g (Papernot & Steinke 2022, RDP order %g)\n",
		s.acc.Training.Epsilon, s.acc.Trial.Epsilon, s.acc.Search.Epsilon, s.base.delta, s.acc.Search.Order)
	steps := 0
	for _, p := range s.acc.Plans {
		steps = max(steps, accountant.StepsPerEpoch(s.trainSet.Len(), p.BatchSize)*p.Epochs)
	}
	fmt.Fprintf(w, "tune: expect about %.3g trials (the mean of %v; the number itself is drawn at random), each a full training run of up to %s steps on %s examples: about %.3g times one such run's time; a line after each trial says how long the rest should take\n",
		s.spec.trials.Mean(), s.spec.trials, cli.Thousands(steps), cli.Thousands(s.trainSet.Len()), s.spec.trials.Mean())
	fmt.Fprintf(w, "tune: the trial lines below (every trial's values and noisy score, and the number of trials) are for the data holder: the ε above does not cover publishing them\n")
}

// eta says, after trial k of n, how long the search has run and how long the rest should
// take at the mean time per trial so far.
func (s *tuneSearch) eta(k, n int, start time.Time, w io.Writer) {
	if k >= n {
		return
	}
	took := time.Since(start)
	left := time.Duration(float64(took) / float64(k) * float64(n-k))
	fmt.Fprintf(w, "tune: %d of %d trials in %s; about %s to go\n", k, n, took.Round(time.Second), left.Round(time.Second))
}

// run draws the number of trials and runs them (tuning.Search), then writes the best.
func (s *tuneSearch) run(ctx context.Context, start time.Time, stdout, stderr io.Writer) (int, error) {
	nVal := s.valSet.Len()
	searchStart := time.Now()
	search := &tuning.Search{
		Space:      s.spec.space(),
		Accounting: s.acc,
		Train: tuning.Trainers(func(t tuning.Trial) (*training.Trainer, error) {
			return s.newTrainer(t, stderr)
		}, nVal),
		OnDrawn: func(k int) {
			searchStart = time.Now()
			if k == 1 {
				fmt.Fprintf(stderr, "tune: 1 trial drawn\n")
			} else {
				fmt.Fprintf(stderr, "tune: %d trials drawn\n", k)
			}
		},
		OnTrial: func(t tuning.Scored) {
			defer s.eta(t.Index, t.Of, searchStart, stderr)
			if !math.IsInf(t.Score, -1) {
				fmt.Fprintf(stderr, "tune: trial %d of %d: %s: noisy validation accuracy %s (%.1f of %s correct); its training ε = %.4g\n",
					t.Index, t.Of, s.spec.describe(t.Config), percent(t.Score/float64(nVal)), t.Score, cli.Thousands(nVal), t.Epsilon)
			} else {
				fmt.Fprintf(stderr, "tune: trial %d of %d: %s: training diverged (score −∞)\n", t.Index, t.Of, s.spec.describe(t.Config))
			}
		},
	}
	if s.seeded {
		seed := s.base.seed
		search.Seed = &seed
	}
	res, err := search.Run(ctx)
	if ie := (*tuning.InterruptedError)(nil); errors.As(err, &ie) {
		fmt.Fprintf(stderr, "tune: interrupted in trial %d of %d; nothing released (the search's ε = %.4g covers what ran)\n", ie.Index, ie.Of, s.acc.Search.Epsilon)
		return exit.Interrupted, nil
	}
	if err != nil {
		return 0, err
	}
	if s.base.checkpoint != "" {
		if err := saveCheckpoint(s.base.checkpoint, res.Checkpoint); err != nil {
			return 0, fileError("checkpoint", s.base.checkpoint, err)
		}
	}
	sum := s.summary(res, time.Since(start))
	if s.base.json {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(sum); err != nil {
			return 0, err
		}
	} else {
		sum.writeText(stdout)
	}
	return exit.OK, nil
}

// newTrainer builds the trainer of trial t: its options (the command line with t's
// values), its model, the validation part as its test set, progress at its epochs' ends.
func (s *tuneSearch) newTrainer(t tuning.Trial, stderr io.Writer) (*training.Trainer, error) {
	c := t.Config
	z := 0.0
	if !s.zGiven || s.z > 0 {
		z = s.z
	}
	o, err := s.trialOptions(c, z, t.Seed)
	if err != nil {
		return nil, err
	}
	if kind, _ := cli.OwnDataKind(o.dataset); kind == "images" && !o.set["model"] {
		if o.model, err = defaultModel(s.trainSet.Shape()); err != nil {
			return nil, exit.Usagef("-dataset %s: %v", o.dataset, err)
		}
	}
	if _, err := modelSpec(o, s.trainSet.Shape(), s.trainSet.NumClasses()); err != nil {
		return nil, err
	}
	m, cfg, err := o.trainerConfig(s.trainSet, s.valSet, s.dataName, io.Discard)
	if err != nil {
		return nil, err
	}
	cfg.Callbacks.OnEpoch = func(m training.EpochMetrics) error {
		if m.Epoch < o.epochs {
			// No accuracy: the trial's only release is its noisy score.
			fmt.Fprintf(stderr, "tune: trial %d of %d: epoch %d of %d done\n", t.Index, t.Of, m.Epoch, o.epochs)
		}
		return nil
	}
	cfg.Settings[settingValidationSplit] = splitContentHash // as o.settings() has it; kept explicit, the search's split
	cfg.Settings[settingTuneTrial] = s.spec.describe(c)
	if t.Seeded {
		seed := t.Seed
		cfg.Seed = &seed
	}
	tr, err := training.NewTrainer(m, cfg)
	if err != nil {
		if errors.Is(err, training.ErrConfig) {
			return nil, exit.Usagef("-tune %s: %v", s.spec.describe(c), err)
		}
		return nil, err
	}
	return tr, nil
}

// tuneSummary is the final report (the -json object).
type tuneSummary struct {
	// Trials and BestTrial are not covered by the search's ε (the theorems assume that
	// only the best trial is seen, not even how many ran): NotCovered names them.
	Trials       int               `json:"trials"`
	Distribution string            `json:"distribution"`
	BestTrial    int               `json:"best_trial"`
	NotCovered   []string          `json:"not_covered_by_epsilon"`
	Best         map[string]string `json:"best"`
	bestText     string            // the best values in the spec's order
	// Score is the best trial's noisy validation accuracy (a fraction).
	Score           float64 `json:"score"`
	ScoreNoise      float64 `json:"score_noise"`
	ValidationN     int     `json:"validation_examples"`
	NoiseMultiplier float64 `json:"noise_multiplier,omitempty"`
	Epsilon         float64 `json:"epsilon"`
	Delta           float64 `json:"delta"`
	Order           float64 `json:"order"`
	TrialEpsilon    float64 `json:"trial_epsilon"`
	// CheckpointEpsilon is the ε the checkpoint's own ledger gives: one trial's.
	CheckpointEpsilon float64 `json:"checkpoint_epsilon"`
	Checkpoint        string  `json:"checkpoint,omitempty"`
	Seconds           float64 `json:"seconds"`
	CPUPath           string  `json:"cpu_path"` // as train's summary: the kernels' path
}

func (s *tuneSearch) summary(res *tuning.Result, wall time.Duration) *tuneSummary {
	best := res.Best
	sum := &tuneSummary{
		Trials: res.Trials, Distribution: s.spec.trials.String(), BestTrial: best.Index, Best: s.spec.space().Values(best.Config), NotCovered: []string{"trials", "best_trial"},
		Score: best.Score / float64(s.valSet.Len()), ScoreNoise: s.spec.scoreNoise, ValidationN: s.valSet.Len(),
		Epsilon: s.acc.Search.Epsilon, Delta: s.base.delta, Order: s.acc.Search.Order, TrialEpsilon: s.acc.Trial.Epsilon,
		CheckpointEpsilon: best.Epsilon, Checkpoint: s.base.checkpoint, Seconds: math.Round(wall.Seconds()*10) / 10,
		CPUPath:  cpupath.Current().String(),
		bestText: s.spec.describe(best.Config),
	}
	if !s.zGiven || s.z > 0 {
		sum.NoiseMultiplier = s.z
	}
	return sum
}

func (t *tuneSummary) writeText(w io.Writer) {
	fmt.Fprintf(w, "best: %s; noisy validation accuracy %s (score noise σ = %g on %s examples)\n",
		t.bestText, percent(t.Score), t.ScoreNoise, cli.Thousands(t.ValidationN))
	fmt.Fprintf(w, "privacy: the search is (ε = %.4g, δ = %g)-DP for the release of the best trial's model, values and noisy score (number of trials %s; Papernot & Steinke 2022); each trial alone: ε = %.4g\n",
		t.Epsilon, t.Delta, t.Distribution, t.TrialEpsilon)
	if t.Checkpoint != "" {
		fmt.Fprintf(w, "checkpoint: %s (the best trial's model; its ledger records that trial only, ε = %.4g: count the search's ε = %.4g against the data set)\n",
			t.Checkpoint, t.CheckpointEpsilon, t.Epsilon)
	} else {
		fmt.Fprintf(w, "checkpoint: none written (use -checkpoint FILE to keep the best trial's model)\n")
	}
	fmt.Fprintf(w, "not covered by ε (for the data holder; publishing it is a further release): %d trials drawn, the best was trial %d\n", t.Trials, t.BestTrial)
	fmt.Fprintf(w, "time: %s, CPU path %s\n", roundDuration(t.Seconds), cpupath.Describe())
}
