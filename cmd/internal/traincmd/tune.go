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
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
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
type tuneConfig []string

// configs returns every combination of the spec's values.
func (s *tuneSpec) configs() []tuneConfig {
	out := []tuneConfig{{}}
	for _, p := range s.params {
		var next []tuneConfig
		for _, c := range out {
			for _, v := range p.values {
				next = append(next, append(slices.Clone(c), v))
			}
		}
		out = next
	}
	return out
}

// describe writes a configuration as "lr=1 clip=0.5".
func (s *tuneSpec) describe(c tuneConfig) string {
	parts := make([]string, len(c))
	for i, v := range c {
		parts[i] = s.params[i].name + "=" + v
	}
	return strings.Join(parts, " ")
}

// tuneSearch is a planned search: the spec, the data, the noise multiplier and the
// accounting.
type tuneSearch struct {
	spec      *tuneSpec
	base      *options
	args      []string
	trainSet  datasets.Dataset
	valSet    datasets.Dataset
	dataName  string
	dataFP    string // the content fingerprint of the whole training set (budget.go)
	notes     []string
	seeded    bool
	z         float64 // the noise multiplier of every trial (noiseGiven: per config)
	zGiven    bool    // -noise or noise= fixes z; otherwise z is calibrated for the search
	orders    []float64
	trialRDP  []float64 // one trial's RDP at orders: the most of every configuration, score included
	searchRDP []float64 // the whole search's, accountant.TuningRDP of trialRDP
	trialEps  accountant.Spent
	searchEps accountant.Spent
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
		Orders: slices.Clone(s.orders), RDP: slices.Clone(s.searchRDP), Delta: s.base.delta,
		Description: fmt.Sprintf("train -tune %q: private random search, trials %v, score noise σ = %g; ε = %.4g at δ = %g (Papernot & Steinke 2022)",
			s.base.tune, s.spec.trials, s.spec.scoreNoise, s.searchEps.Epsilon, s.base.delta),
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
		if o.set[p.name] {
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
	s := &tuneSearch{spec: spec, base: o, args: args, seeded: o.set["seed"], orders: accountant.OrdersUpTo(256)}
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
// content: datasets.HashSplit with the validation domain, the split -validation makes
// too (validation.go). Adding or removing one example moves no other: neighbouring data
// sets give trained-on parts and validation parts that differ in that one example at
// most, which the search's privacy needs. The number held out is binomial rather than
// exact, and identical examples go to the same part.
func tuneSplit(ds datasets.Dataset, fraction float64, seed uint64) (train, val datasets.Dataset, err error) {
	trainIdx, valIdx, err := datasets.HashSplit(ds, fraction, seed, datasets.DomainValidation)
	if err != nil {
		return nil, nil, err
	}
	if len(valIdx) == 0 || len(trainIdx) == 0 {
		return nil, nil, exit.Usagef("-validation %g with -tune: of the %s training examples, %s fall in the validation part and %s in the trained-on part; both must be ≥ 1 (choose another fraction or -split-seed)",
			fraction, cli.Thousands(ds.Len()), cli.Thousands(len(valIdx)), cli.Thousands(len(trainIdx)))
	}
	if train, err = datasets.Subset(ds, trainIdx); err != nil {
		return nil, nil, err
	}
	if val, err = datasets.Subset(ds, valIdx); err != nil {
		return nil, nil, err
	}
	return train, val, nil
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

// trialPlan is what a trial's privacy depends on.
type trialPlan struct {
	batch, epochs int
	z             float64 // 0: the search's z
}

// trialPlans returns the distinct plans of configs, z given by the configuration when
// it fixes it (noise=, -noise) and 0 otherwise.
func (s *tuneSearch) trialPlans(configs []tuneConfig) ([]trialPlan, error) {
	n := s.trainSet.Len()
	var plans []trialPlan
	for _, c := range configs {
		o, err := s.trialOptions(c, 0, 1)
		if err != nil {
			return nil, err
		}
		p := trialPlan{o.batch, o.epochs, 0}
		if s.zGiven {
			p.z = o.noise
		}
		if p.batch > n {
			return nil, exit.Usagef("-tune %s: -batch %d is larger than the training set (%s examples after the validation split)", s.spec.describe(c), p.batch, cli.Thousands(n))
		}
		if !slices.Contains(plans, p) {
			plans = append(plans, p)
		}
	}
	return plans, nil
}

// trialRDPAt returns the RDP at s.orders of one trial of every plan, those without their
// own noise multiplier at z, the score's Gaussian mechanism included, as the most over
// the plans.
func (s *tuneSearch) trialRDPAt(plans []trialPlan, z float64) ([]float64, error) {
	n := s.trainSet.Len()
	out := make([]float64, len(s.orders))
	for _, p := range plans {
		if p.z == 0 {
			p.z = z
		}
		steps := accountant.StepsPerEpoch(n, p.batch) * p.epochs
		rdp, err := accountant.SampledGaussianRDP(float64(p.batch)/float64(n), p.z, s.orders)
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i] = math.Max(out[i], float64(steps)*rdp[i])
		}
	}
	for i, a := range s.orders {
		out[i] += a / (2 * s.spec.scoreNoise * s.spec.scoreNoise) // the score: sensitivity 1
	}
	return out, nil
}

// plan fixes z (given, or calibrated for the search's budget) and the accounting.
func (s *tuneSearch) plan(configs []tuneConfig) error {
	o := s.base
	plans, err := s.trialPlans(configs)
	if err != nil {
		return err
	}
	searchEps := func(z float64) (accountant.Spent, []float64, error) {
		trial, err := s.trialRDPAt(plans, z)
		if err != nil {
			return accountant.Spent{}, nil, err
		}
		spent, err := accountant.TuningEpsilon(s.spec.trials, s.orders, trial, o.delta, accountant.Balle)
		return spent, trial, err
	}
	if !s.zGiven {
		// -epsilon is the budget of the whole search. The score's noise alone sets a floor.
		floor := make([]float64, len(s.orders))
		for i, a := range s.orders {
			floor[i] = a / (2 * s.spec.scoreNoise * s.spec.scoreNoise)
		}
		f, err := accountant.TuningEpsilon(s.spec.trials, s.orders, floor, o.delta, accountant.Balle)
		if err != nil {
			return err
		}
		if f.Epsilon >= o.epsilon {
			return exit.Usagef("-epsilon %g with -tune: the noisy validation scores alone spend ε = %.4g over a search with trials %v, however much noise the training takes; raise -epsilon or score-noise=σ (now %g)", o.epsilon, f.Epsilon, s.spec.trials, s.spec.scoreNoise)
		}
		z, _, err := accountant.Calibrate(o.epsilon, func(z float64) (float64, error) {
			spent, _, err := searchEps(z)
			return spent.Epsilon, err
		})
		if err != nil {
			return err
		}
		s.z = z
	}
	spent, trial, err := searchEps(s.z)
	if err != nil {
		return err
	}
	s.trialRDP, s.searchEps = trial, spent
	if s.searchRDP, err = accountant.TuningRDP(s.spec.trials, s.orders, trial, accountant.Balle); err != nil {
		return err
	}
	if s.trialEps, err = accountant.EpsilonFromRDP(s.orders, trial, o.delta, accountant.Balle); err != nil {
		return err
	}
	if s.zGiven && o.set["epsilon"] && spent.Epsilon > o.epsilon {
		return exit.Usagef("-tune: the search spends ε = %.4g at δ = %g, above -epsilon %g; raise the noise, lower the expected number of trials, or raise -epsilon", spent.Epsilon, o.delta, o.epsilon)
	}
	return nil
}

// header prints the search's plan and its privacy before the first trial.
func (s *tuneSearch) header(w io.Writer) {
	var values []string
	for _, p := range s.spec.params {
		values = append(values, p.name+" ∈ {"+strings.Join(p.values, ", ")+"}")
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
	fmt.Fprintf(w, "privacy: each trial ε ≤ %.4g; the search (the best trial's model, values and noisy score, the choice included): ε = %.4g at δ = %g (Papernot & Steinke 2022, RDP order %g)\n",
		s.trialEps.Epsilon, s.searchEps.Epsilon, s.base.delta, s.searchEps.Order)
	fmt.Fprintf(w, "tune: the trial lines below (every trial's values and noisy score, and the number of trials) are for the data holder: the ε above does not cover publishing them\n")
}

// tuneTrial is a finished trial.
type tuneTrial struct {
	index    int
	config   tuneConfig
	score    float64 // noisy count of correct validation predictions (−Inf: the trial failed)
	ckpt     *checkpoint.Training
	trialEps float64 // the trial's own ledger's ε
}

// run draws the number of trials and runs them, then writes the best.
func (s *tuneSearch) run(ctx context.Context, start time.Time, stdout, stderr io.Writer) (int, error) {
	var src *privrand.Source
	if s.seeded {
		src = privrand.NewSeeded(s.base.seed, privrand.Tuning)
	} else {
		var err error
		if src, err = privrand.NewSecure(privrand.Tuning); err != nil {
			return 0, err
		}
	}
	k := s.spec.trials.Draw(src.Float64())
	if k == 1 {
		fmt.Fprintf(stderr, "tune: 1 trial drawn\n")
	} else {
		fmt.Fprintf(stderr, "tune: %d trials drawn\n", k)
	}
	if k == 0 {
		return 0, fmt.Errorf("the number of trials drawn is 0 (probability e^−%g under %v): nothing trained, nothing released; the search's ε = %.4g is spent all the same", s.spec.trials.Mu, s.spec.trials, s.searchEps.Epsilon)
	}
	var best *tuneTrial
	nVal := s.valSet.Len()
	for i := 1; i <= k; i++ {
		c := make(tuneConfig, len(s.spec.params))
		for j, p := range s.spec.params {
			c[j] = p.values[src.Rand().IntN(len(p.values))]
		}
		seed := src.Uint64()
		progress := func(epoch, epochs int) {
			if epoch < epochs {
				// No accuracy: the trial's only release is its noisy score.
				fmt.Fprintf(stderr, "tune: trial %d of %d: epoch %d of %d done\n", i, k, epoch, epochs)
			}
		}
		tr, trainer, err := s.runTrial(ctx, c, seed, progress)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				fmt.Fprintf(stderr, "tune: interrupted in trial %d of %d; nothing released (the search's ε = %.4g covers what ran)\n", i, k, s.searchEps.Epsilon)
				return exit.Interrupted, nil
			}
			return 0, err
		}
		tr.index = i
		noise := []float64{0}
		src.AddGaussian(noise, s.spec.scoreNoise)
		if !math.IsInf(tr.score, -1) {
			tr.score += noise[0]
			fmt.Fprintf(stderr, "tune: trial %d of %d: %s: noisy validation accuracy %s (%.1f of %s correct); its training ε = %.4g\n",
				i, k, s.spec.describe(c), percent(tr.score/float64(nVal)), tr.score, cli.Thousands(nVal), tr.trialEps)
		} else {
			fmt.Fprintf(stderr, "tune: trial %d of %d: %s: training diverged (score −∞)\n", i, k, s.spec.describe(c))
		}
		if best == nil || tr.score > best.score {
			best = tr
			if !math.IsInf(tr.score, -1) {
				if tr.ckpt, err = trainer.Checkpoint(); err != nil {
					return 0, err
				}
			}
		}
	}
	if math.IsInf(best.score, -1) {
		return 0, fmt.Errorf("every one of the %d trials diverged: nothing released; try lower lr values", k)
	}
	if s.base.checkpoint != "" {
		if err := saveCheckpoint(s.base.checkpoint, best.ckpt); err != nil {
			return 0, fileError("checkpoint", s.base.checkpoint, err)
		}
	}
	sum := s.summary(best, k, time.Since(start))
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

// runTrial trains one trial with the values c and returns it with its un-noised score,
// and its trainer.
func (s *tuneSearch) runTrial(ctx context.Context, c tuneConfig, seed uint64, progress func(epoch, epochs int)) (*tuneTrial, *training.Trainer, error) {
	z := 0.0
	if !s.zGiven || s.z > 0 {
		z = s.z
	}
	o, err := s.trialOptions(c, z, seed)
	if err != nil {
		return nil, nil, err
	}
	if kind, _ := cli.OwnDataKind(o.dataset); kind == "images" && !o.set["model"] {
		if o.model, err = defaultModel(s.trainSet.Shape()); err != nil {
			return nil, nil, exit.Usagef("-dataset %s: %v", o.dataset, err)
		}
	}
	if _, err := modelSpec(o, s.trainSet.Shape(), s.trainSet.NumClasses()); err != nil {
		return nil, nil, err
	}
	m, cfg, err := o.trainerConfig(s.trainSet, s.valSet, s.dataName, io.Discard)
	if err != nil {
		return nil, nil, err
	}
	cfg.Callbacks.OnEpoch = func(m training.EpochMetrics) error { progress(m.Epoch, o.epochs); return nil }
	cfg.Settings[settingValidationSplit] = splitContentHash // as o.settings() has it; kept explicit, the search's split
	cfg.Settings[settingTuneTrial] = s.spec.describe(c)
	if s.seeded {
		cfg.Seed = &seed
	}
	t, err := training.NewTrainer(m, cfg)
	if err != nil {
		if errors.Is(err, training.ErrConfig) {
			return nil, nil, exit.Usagef("-tune %s: %v", s.spec.describe(c), err)
		}
		return nil, nil, err
	}
	res, err := t.Run(ctx)
	tr := &tuneTrial{config: c}
	switch {
	case err != nil && errors.Is(err, nn.ErrParams):
		// Diverged: a function of the noisy training alone, so scoring it −∞ keeps the
		// score private.
		tr.score = math.Inf(-1)
	case err != nil:
		return nil, nil, err
	case math.IsNaN(res.TestAccuracy):
		tr.score = math.Inf(-1)
	default:
		tr.score = math.Round(res.TestAccuracy * float64(s.valSet.Len()))
	}
	if err := s.checkTrialLedger(t.Ledger()); err != nil {
		return nil, nil, err
	}
	if spent, err := t.Spent(); err == nil {
		tr.trialEps = spent.Epsilon
	}
	return tr, t, nil
}

// checkTrialLedger refuses a trial whose ledger spent more, at some order, than the
// search's accounting planned for a trial: the ε printed would not cover it.
func (s *tuneSearch) checkTrialLedger(l *accountant.Ledger) error {
	if l == nil {
		return errors.New("tune: a trial ran without a ledger")
	}
	planned := make(map[float64]float64, len(s.orders))
	for i, a := range s.orders {
		planned[a] = s.trialRDP[i]
	}
	rdp := l.RDP()
	for i, a := range l.Orders() {
		if p, ok := planned[a]; ok && rdp[i] > p*(1+1e-9) {
			return fmt.Errorf("tune: a trial's ledger holds RDP %.6g at order %g, above the %.6g the search's ε was computed with (a bug: please report it)", rdp[i], a, p)
		}
	}
	return nil
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

func (s *tuneSearch) summary(best *tuneTrial, k int, wall time.Duration) *tuneSummary {
	values := map[string]string{}
	for i, p := range s.spec.params {
		values[p.name] = best.config[i]
	}
	sum := &tuneSummary{
		Trials: k, Distribution: s.spec.trials.String(), BestTrial: best.index, Best: values, NotCovered: []string{"trials", "best_trial"},
		Score: best.score / float64(s.valSet.Len()), ScoreNoise: s.spec.scoreNoise, ValidationN: s.valSet.Len(),
		Epsilon: s.searchEps.Epsilon, Delta: s.base.delta, Order: s.searchEps.Order, TrialEpsilon: s.trialEps.Epsilon,
		CheckpointEpsilon: best.trialEps, Checkpoint: s.base.checkpoint, Seconds: math.Round(wall.Seconds()*10) / 10,
		CPUPath:  cpupath.Current().String(),
		bestText: s.spec.describe(best.config),
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
