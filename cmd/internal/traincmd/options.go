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
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/nn"
)

// The defaults of a run with no flags: DP-SGD on the MNIST CNN on the embedded sample at
// ε = 3, δ = 1e-5. They were tuned for test accuracy within a few minutes on two cores
// (see the README's tuning table); defaultEpochs is the knob that sets the run time.
const (
	defaultEpochs        = 30
	defaultBatch         = 2048
	defaultPhysicalBatch = 128
	defaultClip          = 1.0
	defaultActivation    = "tanh"
	defaultEpsilon       = 3.0
	defaultDelta         = 1e-5
	defaultLSSigma       = 1.0
	defaultHeavyMomentum = 0.9 // dp-hb and dp-nag when -momentum is not given
	defaultClipQuantile  = 0.5 // -clipping adaptive: the median norm (Andrew et al. 2021)

	// The non-private optimizers (sgd, adam) need no large batches (there is no noise
	// to average out) and fewer epochs; with the private defaults (batch 2048, 30
	// epochs) sgd reached only 93.6 % and at 5 epochs was unstable (57 % and 86 % test
	// accuracy with seeds 2 and 1). See docs/results/train-defaults.md.
	defaultNonPrivateBatch  = 128
	defaultNonPrivateEpochs = 10
)

var (
	datasetNames = []string{"mnist", "fashion-mnist", "cifar10", "cifar100", "csv:PATH", "images:DIR"}
	// builtinShape is the example shape of the built-in data sets.
	builtinShape = cli.BuiltinShape
)

// options are the parsed flags.
type options struct {
	model, activation      string
	modelFileSum           string           // SHA-256 of -model FILE.json (modelfile.go)
	modelFileArch          *nn.Architecture // -model FILE.json as first read (modelfile.go)
	printModel             bool             // -print-model (modelfile.go)
	prepareOnly            bool             // -prepare-only (prepare.go)
	config                 string           // -config FILE (config.go)
	recipe                 string           // -recipe NAME (recipe.go)
	distributed            string           // -distributed mpi (distributed.go)
	dist                   *distributedRun  // this process's place in the job; nil: one process
	dataset, data          string
	optimizer              string
	lr                     float64
	lrSchedule             string
	warmupSteps            int     // -warmup-steps (schedule.go)
	ema                    float64 // -ema decay, 0: no averaging (schedule.go)
	loss                   string  // -loss cross-entropy | focal:GAMMA (loss.go)
	averageIterates        string  // -average-iterates uniform|step ("" or off: none; iterateavg.go)
	planSteps              int     // the plan's steps, set once the data is loaded (0 before)
	decaySteps             int     // a cosine schedule's horizon, set by scheduleFor (0: none)
	momentum               float64
	batch, physicalBatch   int
	epochs                 int
	clip                   float64
	clipping               string
	clipQuantile, clipLR   float64 // -clipping adaptive: γ and η_C
	clipCountNoise         float64 // -clipping adaptive: σ_b (0: batch/20)
	noise, epsilon, delta  float64
	accountant             string
	lsSigma                float64
	lsAxis                 string
	lsAxisUnrecorded       bool
	adp                    adpOptions // -adp-schedule and its flags (optimizers.go)
	sampling               string
	seed                   uint64
	float64                bool
	featureCache           string // -feature-cache DIR (models.go)
	checkpoint, resume     string
	checkpointEvery        int
	allowRewind            bool
	protect                protectFlags // -allow-unsigned, -overwrite (lock.go)
	metrics, plot          string
	json                   bool
	set                    map[string]bool // flags given on the command line
	fromCheckpoint         []string        // flags taken from the resumed checkpoint
	seedFromCheckpoint     bool
	privacyFromCheckpoint  bool
	physicalBatchDefaulted bool
	own                    ownDataFlags // -dataset csv:, images:, cifar100
	aug                    augmentFlags // -augmult, -augment
	validation             float64      // -validation FRACTION of the training set (0: off; validation.go)
	legacyValidationSplit  bool         // resumed from a checkpoint split by the stratified rule of earlier versions (validation.go)
	budget                 budgetFlags  // -budget, -budget-store (budget.go)
	tune                   string       // -tune SPEC: a private random search (tune.go)
	noCheckpoint           bool         // -no-checkpoint: a -tune search that keeps no model (tune.go)
	tuneRecipe             bool         // -tune-recipe: -tune over -recipe's own search space (recipe.go)
	fromRecipe             []string     // flags that -recipe set (applyRecipe), not the user
	tuneFixed              []string     // -tune-recipe's keys given on the command line, left out of the search
	// calibratedFor is the ε the noise multiplier was calibrated for when the run
	// started (0: z was given with -noise, or a checkpoint older than this setting does
	// not say). A resumed run keeps the checkpoint's z whatever -epsilon says now.
	calibratedFor float64
	// calibratedForSetting is its value in the settings ("": not recorded).
	calibratedForSetting string
}

// settingCalibratedFor records in the settings (and so in every checkpoint of the run)
// the ε the noise multiplier was calibrated for: a resumed run keeps z and may change
// its budget with -epsilon, so the checkpoint's plan alone cannot say it.
const settingCalibratedFor = "noise-calibrated-for"

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are reported in one line by run
	fs.StringVar(&o.recipe, "recipe", "", "a named set of flag values (see Recipes below): "+strings.Join(recipeNames, " | ")+"; flags given override the recipe's values")
	fs.StringVar(&o.model, "model", "", "network: logreg | mlp (one hidden layer of -hidden units) | cnn (the MNIST CNN, C×28×28) | cifar-cnn (C×32×32) | cifar-tb-cnn (C×32×32) | scatter-linear | scatter-cnn (ScatterNet front end: the scattering and the parameter-free GroupNorm after it, and for scatter-linear the Flatten, are computed once before training; C×28×28 or C×32×32); or FILE.json, your own network in the architecture JSON that checkpoints store (-print-model prints any model's; docs/models.md); see Models below. Default: by the data, cnn for 28×28 images (mnist, fashion-mnist, images:DIR), cifar-cnn for 32×32 (cifar10, cifar100, images:DIR), logreg for csv:PATH")
	fs.StringVar(&o.activation, "activation", defaultActivation, "hidden activation of mlp, cnn, cifar-cnn, cifar-tb-cnn and scatter-cnn: relu | tanh (logreg and scatter-linear have no hidden layer)")
	fs.StringVar(&o.dataset, "dataset", "mnist", "data set: mnist | fashion-mnist | cifar10 | cifar100 | csv:PATH (numeric features and a label column; see -label, -scale) | images:DIR (one subfolder of PNG/JPEG images per class; see -image-size, -channels)")
	fs.StringVar(&o.data, "data", "", "data directory (default: mnist: the embedded 8,000/2,000 sample; fashion-mnist: "+mnist.DebianFashionDir+"; cifar10, cifar100: required)")
	fs.StringVar(&o.optimizer, "optimizer", "dp-sgd", optimizerUsage())
	fs.Float64Var(&o.lr, "lr", 0, "learning rate (default: per optimizer, "+lrDefaults()+")")
	fs.StringVar(&o.lrSchedule, "lr-schedule", "constant", "learning-rate schedule: constant | step:AT:FACTOR (×FACTOR from step AT) | inverse-time (lr/(t+1)) | inverse-sqrt[:A:C] (lr/√(A+C·t), default A=C=1) | cosine[:ALPHA] (half a cosine from lr down to ALPHA·lr over the plan's steps after any warm-up, then ALPHA·lr; default ALPHA=0). With -warmup-steps its step numbers count from the end of the warm-up")
	fs.IntVar(&o.warmupSteps, "warmup-steps", 0, "linear learning-rate warm-up: the rate rises from 0 to the -lr-schedule's first rate over the first `N` steps (step t < N has rate lr·t/N), then the -lr-schedule runs (0: no warm-up)")
	fs.StringVar(&o.averageIterates, "average-iterates", "", averageIteratesUsage)
	fs.Float64Var(&o.ema, "ema", 0, "keep an exponential moving average of the parameters with decay `β` in (0, 1) (β_t = min(β, (1+t)/(10+t)) as in JAX Privacy; e.g. 0.999): the periodic evaluations (on the test set, or on the -validation split), the final accuracy and models loaded from the checkpoint use the average; post-processing, no privacy cost (0: off)")
	fs.StringVar(&o.loss, "loss", "cross-entropy", lossUsage)
	fs.IntVar(&o.batch, "batch", defaultBatch, fmt.Sprintf("expected logical batch size b (sgd and adam: %d); Poisson sampling includes each example with q = b/n. Not given and more than half of the n training examples: a quarter of them, ⌊n/4⌋ (e.g. 80 for 320), with a note; given, it must not exceed n", defaultNonPrivateBatch))
	fs.IntVar(&o.physicalBatch, "physical-batch", defaultPhysicalBatch, "rows per model call (at most -batch unless given; a larger value than a step can fill is lowered to it, with a note); larger logical batches run in chunks, padding rows are masked")
	fs.IntVar(&o.epochs, "epochs", defaultEpochs, fmt.Sprintf("epochs of ⌈n/b⌉ steps each (sgd and adam: %d)", defaultNonPrivateEpochs))
	fs.Float64Var(&o.clip, "clip", defaultClip, "clipping norm C: each example's gradient is clipped to L2 norm C (per-layer: the total bound; adaptive: the initial C)")
	fs.StringVar(&o.clipping, "clipping", "flat", "clipping: flat (whole gradient) | per-layer (each layer to C/√layers) | adaptive (flat, C tracks the -clip-quantile of the per-example norms from a noisy count, Andrew et al. 2021; same ε, the gradient noise rises from z to z_Δ = (z⁻² − (2σ_b)⁻²)^(−½))")
	fs.Float64Var(&o.clipQuantile, "clip-quantile", defaultClipQuantile, "-clipping adaptive: target quantile γ in (0, 1), the fraction of examples left unclipped")
	fs.Float64Var(&o.clipLR, "clip-lr", dpoptim.DefaultClipLearningRate, "-clipping adaptive: learning rate η_C of the geometric update C ← C·exp(−η_C·(b̃ − γ))")
	fs.Float64Var(&o.clipCountNoise, "clip-count-noise", 0, "-clipping adaptive: standard deviation σ_b of the noise on the count of unclipped examples; must exceed z/2 (default: batch/20)")
	fs.Float64Var(&o.noise, "noise", 0, "noise multiplier z (noise std z·C); the ε of the plan is reported (default: calibrated for -epsilon)")
	fs.Float64Var(&o.epsilon, "epsilon", defaultEpsilon, "target ε: the noise multiplier is calibrated so that the whole plan spends at most ε")
	fs.Float64Var(&o.delta, "delta", defaultDelta, "δ of the (ε, δ) guarantee, in (0, 1); keep it well below 1/n")
	fs.StringVar(&o.accountant, "accountant", "rdp", "privacy accountant that calibrates the noise and reports ε (also for a resumed checkpoint): rdp (Rényi DP, Balle et al. conversion; long-standing, conservative) | pld (privacy loss distribution, pessimistic discretisation: a tighter upper bound, about 8-10% less noise for the same ε)")
	fs.StringVar(&o.sampling, "sampling", "poisson", "batch sampling: poisson (what ε assumes) | shuffle (fixed-size shuffled batches; ε then assumes Poisson sampling)")
	fs.Uint64Var(&o.seed, "seed", 0, "seed for the initial weights, the sampling and the noise: a reproducible run, NOT private against whoever knows the seed (default: "+privrand.SecureOrigin+")")
	fs.BoolVar(&o.float64, "float64", false, "compute in float64 instead of float32")
	fs.StringVar(&o.config, "config", "", "read flags from `FILE`: one name = value a line (# starts a comment line); a flag on the command line wins over the file, the file over -recipe; the checkpoint records the run's settings whichever way they were given (docs/train.md)")
	fs.BoolVar(&o.prepareOnly, "prepare-only", false, "compute what -model (or -recipe) needs that sees no data, the whitening map of scatter-prior-linear's prior, into its cache, and exit: no data read, no ε spent; run it once after installing (a few minutes on two cores) so that the first run starts training within a minute or two (docs/install.md)")
	fs.BoolVar(&o.printModel, "print-model", false, "print -model's network as the architecture JSON that -model FILE.json reads (for -dataset's examples) and exit: a starting point for your own network (docs/models.md)")
	fs.StringVar(&o.featureCache, "feature-cache", "", "keep the front-end features of scatter models (the scattering of the training and test sets and the parameter-free GroupNorm and Flatten after it, computed before the first step) in directory `DIR` and re-use them in later runs on identical data and front end (file named by a SHA-256 of the front end's settings, the dtype and every raw example; checksummed, keyed by PRIVTRAIN_CHECKPOINT_KEY when it is set so that an edited file is refused, and recomputed with a warning when damaged). Stored raw, 4 bytes per value: 1.1 GB for the 70,000 images of MNIST or Fashion-MNIST, 3.7 GB for CIFAR-10. The files hold features of the private training data: protect DIR as the data. No effect for other models")
	fs.StringVar(&o.checkpoint, "checkpoint", "", "write a checkpoint to `FILE` after every epoch, at the end and on Ctrl-C")
	fs.IntVar(&o.checkpointEvery, "checkpoint-every", 0, "also write the checkpoint every N steps (0: epochs only)")
	registerDistributed(fs, o)
	fs.StringVar(&o.resume, "resume", "", "continue the run saved in checkpoint `FILE`; flags not given are taken from it. The checkpoint's noise multiplier is kept: -epsilon then only sets the budget the rest of the run must stay within")
	fs.BoolVar(&o.allowRewind, "allow-rewind", false, "with -resume: continue from a copy older than the newest checkpoint of the same run at -checkpoint; the steps it discards stay counted in ε")
	fs.StringVar(&o.metrics, "metrics", "", "write one JSON line per epoch to `FILE` (epoch, step, loss, train and test accuracy, ε, seconds, eval_split: test, or validation with -validation; training loss and accuracy are not private)")
	fs.StringVar(&o.plot, "plot", "", "draw test (with -validation: validation) accuracy and ε per epoch into `FILE.png`")
	fs.BoolVar(&o.json, "json", false, "print the final summary as one JSON object on stdout")
	addAugmentFlags(fs, &o.aug)
	addValidationFlag(fs, o)
	addBudgetFlags(fs, &o.budget)
	addProtectFlags(fs, &o.protect)
	fs.StringVar(&o.tune, "tune", "", "private hyperparameter search (Papernot & Steinke 2022): `SPEC` = 'lr=0.5,1,2;clip=0.5,1;trials=geometric:mean=8' runs a random number of trials (trials=geometric:mean=M | logarithmic:gamma=G | negbin:eta=E,gamma=G | poisson:mean=M), each with values drawn from the lists, trained on the training set minus -validation (default 0.1) and scored by its validation accuracy with N(0, σ²) noise on the correct count (score-noise=σ, default 10); releases the best trial (-checkpoint) and reports the ε of the whole search. -epsilon is then the budget of the whole search (z calibrated for it); -noise fixes z. Needs -checkpoint FILE or -no-checkpoint. See docs/tuning.md")
	fs.BoolVar(&o.noCheckpoint, "no-checkpoint", false, "with -tune: run the search without -checkpoint; its ε is spent on the data set all the same, but the best trial's model is not kept")
	fs.BoolVar(&o.tuneRecipe, "tune-recipe", false, "with -recipe NAME (an MNIST or Fashion-MNIST one): run -tune over the values the recipe's were chosen from, with its distribution of trials (the spec is printed before the first trial; docs/tuning.md lists each), so that the choice of the recipe's values is inside ε: -epsilon (default 3) is then the budget of the whole search. A flag given beside it that the search varies is fixed at its value and left out of the search. Not with -tune. Needs -checkpoint FILE or -no-checkpoint")
	for _, f := range optimizerFlags {
		if f.text != nil {
			fs.StringVar(f.text(o), f.name, "", f.usage+"; taken by "+takers(f.name, false))
			continue
		}
		fs.Float64Var(f.value(o), f.name, 0, f.usage+"; taken by "+takers(f.name, true))
	}
	addOwnDataFlags(fs, &o.own)
	return fs
}

func oneOf(flagName, v string, allowed []string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return exit.Usagef("-%s %q: unknown (want %s)", flagName, v, strings.Join(allowed, ", "))
}

// validate checks the flags that need no data; resolve has filled the defaults that depend
// on other flags.
func (o *options) validate() error {
	if !isModelFile(o.model) {
		if err := oneOf("model", o.model, modelNames); err != nil {
			return err
		}
	}
	if err := oneOf("activation", o.activation, []string{"relu", "tanh"}); err != nil {
		return err
	}
	if kind, _ := cli.OwnDataKind(o.dataset); kind == "" && builtinShape[o.dataset] == nil {
		return exit.Usagef("-dataset %q: unknown (want %s)", o.dataset, strings.Join(datasetNames, ", "))
	}
	if err := oneOf("optimizer", o.optimizer, optimizerNames); err != nil {
		return err
	}
	if err := oneOf("clipping", o.clipping, []string{"flat", "per-layer", "adaptive"}); err != nil {
		return err
	}
	if err := oneOf("sampling", o.sampling, []string{"poisson", "shuffle"}); err != nil {
		return err
	}
	if err := o.validateValidation(); err != nil {
		return err
	}
	if err := o.validateOwnData(); err != nil {
		return err
	}
	if shape := builtinShape[o.dataset]; shape != nil {
		if _, err := modelSpec(o, shape, 10); err != nil {
			return err
		}
	}
	if !(o.lr > 0) || math.IsInf(o.lr, 0) {
		return exit.Usagef("-lr %v: want a finite learning rate > 0", o.lr)
	}
	if _, err := parseSchedule(o.lrSchedule, o.lr); err != nil {
		return err
	}
	if err := o.validateAverageIterates(); err != nil {
		return err
	}
	if err := o.validateScheduleAndAverage(); err != nil {
		return err
	}
	if err := o.validateLoss(); err != nil {
		return err
	}
	if err := o.validateOptimizer(); err != nil {
		return err
	}
	if o.batch < 1 {
		return exit.Usagef("-batch %d: want ≥ 1", o.batch)
	}
	if o.physicalBatch < 1 {
		return exit.Usagef("-physical-batch %d: want ≥ 1", o.physicalBatch)
	}
	if o.epochs < 1 {
		return exit.Usagef("-epochs %d: want ≥ 1", o.epochs)
	}
	if err := o.validateAugment(); err != nil {
		return err
	}
	if o.checkpointEvery < 0 {
		return exit.Usagef("-checkpoint-every %d: want ≥ 0", o.checkpointEvery)
	}
	if o.checkpointEvery > 0 && o.checkpoint == "" {
		return exit.Usagef("-checkpoint-every needs -checkpoint FILE")
	}
	if o.plot != "" && !strings.HasSuffix(strings.ToLower(o.plot), ".png") {
		return exit.Usagef("-plot %s: want a .png file name", o.plot)
	}
	if o.accountant != "rdp" && o.accountant != "pld" {
		return exit.Usagef("-accountant %q: want rdp or pld", o.accountant)
	}
	if !private(o.optimizer) {
		return nil // validateOptimizer rejected the privacy flags
	}
	if o.set["noise"] && o.set["epsilon"] {
		return exit.Usagef("-noise and -epsilon: give one (-noise z reports the ε it spends; -epsilon ε calibrates z)")
	}
	if !(o.clip > 0) || math.IsInf(o.clip, 0) {
		return exit.Usagef("-clip %v: want a finite clipping norm > 0", o.clip)
	}
	if !(o.delta > 0 && o.delta < 1) {
		return exit.Usagef("-delta %v: want δ in (0, 1)", o.delta)
	}
	if err := o.validateAdaptive(); err != nil {
		return err
	}
	if o.set["noise"] && (o.noise == 0 || dpoptim.CheckNoiseMultiplier(o.noise) != nil) {
		return exit.Usagef("-noise %v: want a finite noise multiplier > 0 (for no noise use a non-private optimizer, sgd or adam)", o.noise)
	}
	if !o.set["noise"] && (!(o.epsilon > 0) || math.IsInf(o.epsilon, 0)) {
		return exit.Usagef("-epsilon %v: want a finite ε > 0", o.epsilon)
	}
	return nil
}

// fitBatch fits -batch to a training set of n examples. The default batch (2048 for the
// private optimizers, 128 for sgd and adam) is for the built-in data sets; on a small
// data set of your own it would exceed n, so a batch not given (on the command line, by
// -recipe or by the resumed checkpoint) that is more than half of n becomes ⌊n/4⌋, at
// least 1: four or more steps per epoch, and q = b/n ≤ 1/4 where the Poisson subsampling
// amplifies privacy. A default of at most n/2 is kept, so the built-in data sets (the
// 8,000 embedded digits: 2048, q = 0.256) train as they always did. The note says so. A
// batch given that exceeds n is a usage error naming the flag and a value that fits.
func (o *options) fitBatch(n int) (note string, err error) {
	quarter := max(1, n/4)
	if !o.given("batch") {
		if o.batch > n/2 {
			note = fmt.Sprintf("-batch %d instead of the default %d: a quarter of the %s training examples (a default batch above n/2 becomes n/4); give -batch to choose another", quarter, o.batch, cli.Thousands(n))
			o.batch = quarter
		}
		return note, nil
	}
	if o.batch <= n {
		return "", nil
	}
	from := ""
	if r := lookupRecipe(o.recipe); r != nil && !contains(o.fromCheckpoint, "batch") {
		if v, ok := r.value("batch"); ok && v == strconv.Itoa(o.batch) {
			from = fmt.Sprintf(" (-recipe %s's value)", r.name)
		}
	}
	return "", exit.Usagef("-batch %d%s is larger than the training set (%s examples): give -batch %d or less, e.g. -batch %d (a quarter of it)",
		o.batch, from, cli.Thousands(n), n, quarter)
}

// resolve fills the defaults that depend on other flags.
func (o *options) resolve() {
	if !o.set["model"] && !contains(o.fromCheckpoint, "model") {
		if kind, _ := cli.OwnDataKind(o.dataset); kind == "csv" {
			o.model = "logreg"
		} else if shape := builtinShape[o.dataset]; shape != nil {
			o.model, _ = defaultModel(shape)
		} else { // images:DIR: by the images' size once they are read (train)
			o.model = "cnn"
		}
	}
	o.resolveOptimizer()
	o.resolveModelDefaults()
	if !private(o.optimizer) {
		if !o.given("batch") {
			o.batch = defaultNonPrivateBatch
		}
		if !o.given("epochs") {
			o.epochs = defaultNonPrivateEpochs
		}
	}
	o.physicalBatchDefaulted = !o.given("physical-batch")
}

// given says whether flag name was given on the command line or taken from the
// resumed checkpoint (and so is not to be defaulted).
func (o *options) given(name string) bool {
	return o.set[name] || contains(o.fromCheckpoint, name)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// settings are the flags that define a run: a resumed run must have the same.
func (o *options) settings() map[string]string {
	s := map[string]string{
		"model":       o.model,
		"dataset":     o.dataset,
		"optimizer":   o.optimizer,
		"lr":          strconv.FormatFloat(o.lr, 'g', -1, 64),
		"lr-schedule": o.lrSchedule,
		"batch":       strconv.Itoa(o.batch),
		"sampling":    o.sampling,
		"float64":     strconv.FormatBool(o.float64),
	}
	if o.model != "logreg" && o.model != "scatter-linear" && o.model != "scatter-prior-linear" && !isModelFile(o.model) {
		s["activation"] = o.activation
	}
	if o.modelFileSum != "" {
		s[settingModelFile] = o.modelFileSum
	}
	o.optimizerSettings(s)
	o.ownDataSettings(s)
	o.scheduleSettings(s)
	o.lossSettings(s)
	o.augmentSettings(s)
	o.validationSettings(s)
	if o.calibratedForSetting != "" {
		s[settingCalibratedFor] = o.calibratedForSetting
	}
	if private(o.optimizer) {
		s["clip"] = strconv.FormatFloat(o.clip, 'g', -1, 64)
		s["clipping"] = o.clipping
		s["delta"] = strconv.FormatFloat(o.delta, 'g', -1, 64)
		if o.clipping == "adaptive" {
			s["clip-quantile"] = strconv.FormatFloat(o.clipQuantile, 'g', -1, 64)
			s["clip-lr"] = strconv.FormatFloat(o.clipLR, 'g', -1, 64)
			s["clip-count-noise"] = strconv.FormatFloat(o.clipCountNoise, 'g', -1, 64)
		}
	}
	return s
}
