package traincmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/smoothing"
	"github.com/privtrain/privtrain/training"
)

const usageHeader = `usage: train [flags]

Trains a network with differential privacy and reports test accuracy and (ε, δ);
with -validation FRACTION, the accuracy on a part of the training set held out for
tuning instead (the test set is not used).
With no flags: DP-SGD on the MNIST CNN, on the MNIST sample built into the binary
(8,000 train / 2,000 test digits), ε = 3, δ = 1e-5. Your own data: -dataset csv:PATH
(with -scale LO:HI) or -dataset images:DIR (one subfolder per class).

Flags:
`

// run executes the command line args and returns the exit status. Progress and the plan go
// to stderr, the final summary to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	start := time.Now()
	o := &options{}
	flags := newFlagSet(o)
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout, flags)
			return exit.OK
		}
		fmt.Fprintf(stderr, "train: %s (see train -help)\n", exit.OneLine(err.Error()))
		return exit.Usage
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "train: unexpected argument %q (flags only; see train -help)\n", flags.Arg(0))
		return exit.Usage
	}
	if err := cli.CPUPathError(); err != nil {
		fmt.Fprintf(stderr, "train: %s\n", err)
		return exit.Usage
	}
	o.set = map[string]bool{}
	flags.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if err := o.applyRecipe(flags); err != nil {
		fmt.Fprintf(stderr, "train: %s\n", exit.OneLine(err.Error()))
		return exit.Usage
	}

	o.budget.command = cli.CommandLine("train", args)
	var err error
	if o.dist, err = startDistributed(o.distributed); err != nil {
		return status(0, err, stderr)
	}
	if o.tune != "" {
		if o.distributed != "" {
			return status(0, exit.Usagef("-tune runs its trials in one process: drop -distributed %s", o.distributed), stderr)
		}
		code, err := tune(ctx, o, args, start, stdout, stderr) // tune.go
		return status(code, err, stderr)
	}
	// In a -distributed job, ranks other than 0 print their errors only (distributed.go).
	var rankErr bytes.Buffer
	code, err := train(o.dist.context(ctx), o, flags, start, o.dist.output(stdout), o.dist.output(stderr))
	return o.dist.exit(status(code, err, o.dist.errors(stderr, &rankErr)), &rankErr, stderr)
}

// status prints err, if not nil, and returns the exit status of a train that returned
// code and err.
func status(code int, err error, stderr io.Writer) int {
	if err != nil {
		var ue *exit.UsageError
		var other *otherRankError
		switch {
		case errors.As(err, &other):
			return other.code
		case errors.As(err, &ue):
			fmt.Fprintf(stderr, "train: %s\n", exit.OneLine(ue.Msg))
			return exit.Usage
		case errors.Is(err, training.ErrMismatch) || errors.Is(err, training.ErrBudget) || errors.Is(err, accountant.ErrUnreachable) || errors.Is(err, training.ErrRewind):
			fmt.Fprintf(stderr, "train: %s\n", exit.OneLine(err.Error()))
			return exit.Usage
		}
		fmt.Fprintf(stderr, "train: %s\n", exit.OneLine(err.Error()))
		return exit.Failure
	}
	return code
}

func printUsage(w io.Writer, flags *flag.FlagSet) {
	fmt.Fprint(w, usageHeader)
	flags.SetOutput(w)
	flags.PrintDefaults()
	flags.SetOutput(io.Discard)
	printModels(w)
	printRecipes(w)
}

// oneLine keeps an error message on one line.

// run state shared by the callbacks.
type session struct {
	o       *options
	trainer *training.Trainer
	out     *reporter
	metrics *metricsLog
	// savedStep is the step of the last checkpoint written (−1: none).
	savedStep int
	// recorded is the step and ε of the last ledger on disk: the last checkpoint
	// written, or the one resumed (step 0, ε 0 for a fresh run). Steps after it
	// have spent privacy that no file records until the next successful write.
	recorded struct {
		step int
		eps  float64
	}
	stderr io.Writer
	// budget is the run's reservation in the budget store (nil: none, such as a
	// -distributed job's ranks other than 0): its ledger head goes into every checkpoint.
	budget *runBudget
}

func train(ctx context.Context, o *options, flags *flag.FlagSet, start time.Time, stdout, stderr io.Writer) (int, error) {
	if o.dist.leader() { // in a -distributed job rank 0 alone writes -checkpoint
		lock, err := lockCheckpoint(o) // before any work: one writer of -checkpoint at a time
		if err != nil {
			return 0, err
		}
		defer lock.Unlock()
	}
	var ck *checkpoint.Training
	var err error
	if o.resume != "" {
		if ck, _, err = o.protect.signing(stderr).Load("resume", o.resume); err != nil {
			return 0, err
		}
		if err := o.checkResumeIterates(ck); err != nil {
			return 0, err
		}
		if err := o.applyCheckpoint(ck, flags); err != nil {
			return 0, err
		}
		if err := o.applyCheckpointSplits(ck, stderr); err != nil { // validation.go
			return 0, err
		}
	}
	if err := checkTarget(o, ck, stderr); err != nil {
		return 0, err
	}
	newest, err := newerCheckpoint(o, ck, stderr)
	if err != nil {
		return 0, err
	}
	o.resolve()
	if err := o.validate(); err != nil {
		return 0, err
	}
	o.dist.dropOutputs(o) // only rank 0 writes
	if ck != nil {
		if err := o.checkResumedValidation(ck); err != nil {
			return 0, err
		}
		if err := o.checkResumedData(ck); err != nil { // validation.go
			return 0, err
		}
	}
	if ck == nil && private(o.optimizer) && !o.set["noise"] {
		o.calibratedFor = o.epsilon
		o.calibratedForSetting = strconv.FormatFloat(o.epsilon, 'g', -1, 64)
	}
	for _, out := range []struct{ flag, path string }{{"checkpoint", o.checkpoint}, {"plot", o.plot}, {"metrics", o.metrics}} {
		if err := checkWritable(out.flag, out.path); err != nil {
			return 0, err
		}
	}
	trainSet, testSet, dataName, notes, err := loadData(o)
	if err != nil {
		return 0, err
	}
	fingerprint := datasets.ContentFingerprint(trainSet) // before -validation's split: the whole set is charged
	if o.validation > 0 {
		// The held-out part of the training set replaces the test set, which is
		// never evaluated; the trainer and the accountant see the rest only.
		all := trainSet.Len()
		var more []string
		if trainSet, testSet, more, err = splitValidation(o, trainSet); err != nil {
			return 0, err
		}
		notes = append(append(notes, validationNote(o, testSet.Len(), all)), more...)
		if o.legacyValidationSplit {
			// A checkpoint split by the old stratified rule: one example more or less
			// moves hundreds of others between the parts, so ε holds for the part trained
			// on only, and that part is the data set this run is charged to.
			fingerprint = datasets.ContentFingerprint(trainSet)
		}
	}
	if kind, _ := cli.OwnDataKind(o.dataset); kind == "images" && !o.set["model"] && !contains(o.fromCheckpoint, "model") {
		if o.model, err = defaultModel(trainSet.Shape()); err != nil {
			return 0, exit.Usagef("-dataset %s: %v", o.dataset, err)
		}
	}
	spec, err := modelSpec(o, trainSet.Shape(), trainSet.NumClasses())
	if err != nil {
		return 0, err
	}
	if note, err := o.fitBatch(trainSet.Len()); err != nil {
		return 0, err
	} else if note != "" {
		notes = append(notes, note)
	}
	m, cfg, err := o.trainerConfigContext(context.WithValue(ctx, priorsAfterPlan{}, true), trainSet, testSet, dataName, stderr)
	if err != nil {
		return 0, err
	}
	if o.validation == 0 {
		cfg.ContentFingerprint = fingerprint // computed once: the budget store's key is the resume check's
	}
	if o.set["seed"] || o.seedFromCheckpoint {
		seed := o.seed
		cfg.Seed = &seed
	}
	cfg.Reducer = o.dist.reducer()
	s := &session{o: o, out: newReporter(stderr), savedStep: -1, stderr: stderr}
	defer s.out.close()
	cfg.OnStep = s.onStep
	cfg.OnEpoch = s.onEpoch
	cfg.OnFrontEnd = s.out.frontEnd
	if s.trainer, err = training.NewTrainer(m, cfg); err != nil {
		if errors.Is(err, nn.ErrTrainConfig) {
			return 0, exit.Usagef("%v", err)
		}
		return 0, err
	}
	if newest != nil {
		// Take over the newest state of the run first, so that the rewind to ck keeps
		// the steps that the newest copy has and ck does not.
		if err := s.trainer.Restore(newest); err != nil {
			return 0, fmt.Errorf("-checkpoint %s: %w", o.checkpoint, err)
		}
		if err := s.trainer.Restore(ck, training.AllowRewind()); err != nil {
			return 0, fmt.Errorf("-resume %s -allow-rewind: %w", o.resume, err)
		}
	} else if ck != nil {
		if err := s.trainer.Restore(ck); err != nil {
			return 0, fileError("resume", o.resume, err)
		}
	}
	warnUncheckedContent(o, ck, stderr)
	var spend *runBudget
	if o.dist.leader() { // one record per job: rank 0's ledger is the job's
		if spend, err = reserveBudget(o, s.trainer, []*checkpoint.Training{ck, newest}, fingerprint, cfg.Rule, stderr); err != nil { // before any output file is touched
			return 0, err
		}
	}
	s.budget = spend
	if s.metrics, err = openMetrics(o.metrics, ck != nil); err != nil {
		spend.settle(s.trainer) // no step ran: settles at none
		return 0, err
	}
	defer s.metrics.close()
	s.metrics.ema, s.metrics.rate = o.ema, rateSchedule(o, cfg.Rule, o.planSteps)
	s.metrics.split = o.evalSplit()
	s.out.header(o, s.trainer, trainSet, testSet, dataName)
	o.dist.describe(stderr, trainSet.Len())
	for _, n := range notes {
		fmt.Fprintf(stderr, "data: %s\n", n)
	}

	s.recorded.step = s.trainer.Steps()
	if ck != nil && ck.Ledger != nil {
		if spent, err := ck.Ledger.Epsilon(ck.Plan.Delta); err == nil {
			s.recorded.eps = spent.Epsilon
		}
	}
	if err := o.dist.ready(); err != nil {
		spend.settle(s.trainer) // no step ran: settles at none
		return 0, err
	}
	spend.report()
	// The plan and the budget first, then a prior's map (minutes the first time, stoppable).
	if err := cli.PreparePriorsContext(ctx, spec, stderr); err != nil {
		spend.settle(s.trainer) // no step ran: settles at none
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "train: %s; no step ran\n", exit.OneLine(err.Error()))
			return exit.Interrupted, nil
		}
		return 0, err
	}
	s.out.markStart(s.trainer.Steps())
	res, runErr := s.trainer.Run(ctx)
	s.out.finishBar()
	spend.settle(s.trainer)
	interrupted := runErr != nil && (errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded))
	if runErr == nil || interrupted {
		o.dist.ran() // every rank stopped after the same step
	}
	if runErr != nil && !interrupted {
		s.reportUnrecorded()
		if errors.Is(runErr, nn.ErrParams) { // a step's parameters overflowed
			kept, try := s.divergenceAdvice()
			return 0, fmt.Errorf("training diverged at step %d of %d: %w (%s); try %s", res.Steps+1, s.trainer.Plan().Steps, runErr, kept, try)
		}
		return 0, runErr
	}
	if o.checkpoint != "" && s.savedStep != res.Steps {
		// onEpoch saved every epoch end; save the state they did not cover (an interrupted
		// epoch, or a resumed run with nothing left to do).
		if err := s.save(); err != nil {
			s.reportUnrecorded()
			return 0, err
		}
	}
	if o.plot != "" {
		if err := writePlot(o.plot, s.metrics.records, s.trainer.Plan(), plotTitle(o, s.trainer, dataName), o.evalSplit(), o.lossOf()); err != nil {
			return 0, fmt.Errorf("-plot %s: %w", o.plot, err)
		}
	}
	if err := s.metrics.close(); err != nil {
		return 0, fmt.Errorf("-metrics %s: %w", o.metrics, err)
	}
	if interrupted {
		where := interruptedWhere(res.Steps, s.trainer.Plan())
		if o.checkpoint != "" {
			fmt.Fprintf(stderr, "train: %s; checkpoint written to %s; continue with: train -resume %s -checkpoint %s\n", where, o.checkpoint, o.checkpoint, o.checkpoint)
		} else {
			fmt.Fprintf(stderr, "train: %s; no checkpoint written (use -checkpoint FILE to be able to resume)\n", where)
		}
		return exit.Interrupted, nil
	}
	sum := newSummary(o, s.trainer, res, dataName, trainSet, testSet, time.Since(start))
	sum.setNoiseOrigin(o, ck != nil)
	sum.DatasetSpend = spend.datasetSpend()
	if o.json {
		if err := sum.writeJSON(stdout); err != nil {
			return 0, err
		}
	} else {
		sum.writeText(stdout)
	}
	return exit.OK, nil
}

// interruptedWhere says where an interrupted run stopped: "after step 5 of 16 (in epoch
// 1 of 2)", or "(after epoch 1 of 2)" at an epoch's end.
func interruptedWhere(step int, p checkpoint.Plan) string {
	if step == 0 {
		return fmt.Sprintf("interrupted before the first of %d steps", p.Steps)
	}
	return fmt.Sprintf("interrupted after step %d of %d (%s)", step, p.Steps, epochPosition(step, p))
}

// epochPosition says where step (steps done) lies: "in epoch 1 of 2" when an epoch is
// under way, "after epoch 1 of 2" at its end.
func epochPosition(step int, p checkpoint.Plan) string {
	if step%p.StepsPerEpoch == 0 {
		return fmt.Sprintf("after epoch %d of %d", step/p.StepsPerEpoch, p.Epochs)
	}
	return fmt.Sprintf("in epoch %d of %d", step/p.StepsPerEpoch+1, p.Epochs)
}

func (s *session) save() error {
	c, err := s.trainer.Checkpoint()
	if err != nil {
		return err
	}
	c.BudgetHead = s.budget.head()
	if err := saveCheckpoint(s.o.checkpoint, c); err != nil {
		return fileError("checkpoint", s.o.checkpoint, err)
	}
	s.savedStep = c.Step
	s.recorded.step = c.Step
	if spent, err := s.trainer.Spent(); err == nil {
		s.recorded.eps = spent.Epsilon
	}
	return nil
}

// reportUnrecorded says, for a private run stopping on an error, which steps spent
// privacy that no checkpoint's ledger records (a checkpoint write failed, training
// diverged, or no -checkpoint was given): the ledger lives in the checkpoint, so
// without this line the spending of those steps would be known nowhere. The stop
// comes at the first failed write, which names its cause (a full disk: "no space
// left on device"); a write probe before the first step could not see a disk that
// fills later.
func (s *session) reportUnrecorded() {
	if s.trainer == nil || s.trainer.Ledger() == nil {
		return
	}
	spent, err := s.trainer.Spent()
	if err != nil || (s.trainer.Steps() <= s.recorded.step && !(spent.Epsilon > s.recorded.eps)) {
		return
	}
	// A step that failed (parameters overflowing) is not counted in Steps but its
	// spending may be in the ledger already: it ran.
	last := max(s.trainer.Steps(), s.recorded.step+1)
	where := "no -checkpoint FILE was given"
	switch {
	case s.o.checkpoint != "" && s.savedStep >= 0:
		where = fmt.Sprintf("the last checkpoint written, %s, records step %d", s.o.checkpoint, s.recorded.step)
	case s.o.checkpoint != "" && s.o.resume != "":
		where = fmt.Sprintf("no checkpoint was written; %s records step %d", s.o.resume, s.recorded.step)
	case s.o.checkpoint != "":
		where = "no checkpoint was written"
	}
	steps := fmt.Sprintf("steps %d to %d", s.recorded.step+1, last)
	if last == s.recorded.step+1 {
		steps = fmt.Sprintf("step %d", last)
	}
	fmt.Fprintf(s.stderr, "train: privacy: %s ran and spent privacy that no ledger records: ε %.4g → %.4g at δ = %g (%s); count ε = %.4g against this data set's budget\n",
		steps, s.recorded.eps, spent.Epsilon, s.trainer.Plan().Delta, where, spent.Epsilon)
}

// stepHook, when set by a test, runs after every step (to interrupt a run at a chosen
// step). It must be nil outside tests.
var stepHook func(training.StepProgress)

func (s *session) onStep(p training.StepProgress) error {
	s.out.step(p)
	if stepHook != nil {
		stepHook(p)
	}
	// A NaN loss with no examples yet this epoch is "no loss"; otherwise a non-finite
	// loss means the parameters overflowed: stop before checkpointing them.
	if math.IsInf(p.Loss, 0) || (math.IsNaN(p.Loss) && p.BatchSize > 0) {
		return s.diverged(p)
	}
	if s.o.checkpointEvery > 0 && p.GlobalStep%s.o.checkpointEvery == 0 && p.Step != p.StepsPerEpoch {
		return s.save()
	}
	return nil
}

// diverged is the error that stops a run whose training loss became non-finite at
// step p: what happened, what was kept, and what to try.
func (s *session) diverged(p training.StepProgress) error {
	kept, try := s.divergenceAdvice()
	return fmt.Errorf("training diverged at step %d of %d: the training loss is %v, the parameters overflowed (%s); try %s",
		p.GlobalStep, p.TotalSteps, p.Loss, kept, try)
}

// divergenceAdvice says which checkpoint a diverged run keeps and what to try.
func (s *session) divergenceAdvice() (kept, try string) {
	kept = "no checkpoint was written"
	if s.savedStep >= 0 {
		kept = fmt.Sprintf("%s keeps step %d", s.o.checkpoint, s.savedStep)
	} else if s.o.checkpoint == "" {
		kept = "nothing was written"
	}
	try = fmt.Sprintf("a lower -lr (now %g)", s.o.lr)
	if private(s.o.optimizer) {
		try += fmt.Sprintf(", a smaller -clip (now %g)", s.o.clip)
	}
	if s.o.lrSchedule == "constant" {
		try += ", a decaying -lr-schedule or -warmup-steps"
	}
	if !s.o.float64 {
		try += ", or -float64"
	}
	return kept, try
}

func (s *session) onEpoch(m training.EpochMetrics) error {
	s.out.epoch(m, s.trainer.Plan())
	if err := s.metrics.write(m); err != nil {
		return fmt.Errorf("-metrics %s: %w", s.o.metrics, err)
	}
	if s.o.checkpoint != "" {
		return s.save()
	}
	return nil
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
	if o.model != "logreg" && o.model != "scatter-linear" && o.model != "scatter-prior-linear" {
		s["activation"] = o.activation
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

// applyCheckpoint takes the flags not given on the command line from the checkpoint of
// the run being resumed, so that "train -resume FILE" alone continues it.
func (o *options) applyCheckpoint(c *checkpoint.Training, flags *flag.FlagSet) error {
	for name, value := range c.Settings {
		if o.set[name] || flags.Lookup(name) == nil {
			continue
		}
		if err := flags.Set(name, value); err != nil {
			return fmt.Errorf("-resume %s: setting %s=%q: %w", o.resume, name, value, err)
		}
		o.fromCheckpoint = append(o.fromCheckpoint, name)
	}
	if err := o.applyCheckpointLegacy(c); err != nil {
		return err
	}
	if !o.set["epochs"] {
		o.epochs = c.Plan.Epochs
		o.fromCheckpoint = append(o.fromCheckpoint, "epochs")
	}
	if !o.set["physical-batch"] {
		o.physicalBatch = c.Plan.PhysicalBatch
		o.fromCheckpoint = append(o.fromCheckpoint, "physical-batch")
	}
	if v, ok := c.Settings[settingCalibratedFor]; ok {
		o.calibratedForSetting = v
		o.calibratedFor, _ = strconv.ParseFloat(v, 64)
	} else if c.Plan.Calibrated {
		o.calibratedFor = c.Plan.TargetEpsilon // a checkpoint from before the setting: its best knowledge
	}
	if !o.set["seed"] && c.Seeded {
		o.seed, o.seedFromCheckpoint = c.Seed, true
	}
	if err := o.checkResumedHorizon(c); err != nil {
		return err
	}
	if c.Plan.Private && !o.set["noise"] && !o.set["epsilon"] {
		o.privacyFromCheckpoint = true
		if c.Plan.Calibrated {
			o.epsilon = c.Plan.TargetEpsilon
		} else {
			o.noise = c.Plan.NoiseMultiplier
			o.set["noise"] = true
		}
	}
	return nil
}

// loadData reads the training and test sets named by -dataset and -data (with the
// flags of your own data, as cmd/evaluate reads them back from a checkpoint); notes are
// what the user should know about the data. With -validation the test set is never
// evaluated, and test files of their own (MNIST's t10k files, CIFAR's test batch) are not read: test is
// nil, and a run can tune without them.
func loadData(o *options) (train, test datasets.Dataset, name string, notes []string, err error) {
	if o.validation > 0 {
		train, name, notes, err = cli.LoadTrainData(o.dataset, o.data, &o.own.DataFlags)
		return train, nil, name, notes, err
	}
	return cli.LoadData(o.dataset, o.data, &o.own.DataFlags)
}

// flagFileError is an error about the file of -flag PATH whose message names the flag
// and the path once: the prefixes that the libraries' errors add ("nn: ",
// "checkpoint: ", "PATH: ") are dropped from its front. errors.Is and errors.As see err.
type flagFileError struct {
	msg string
	err error
}

func (e *flagFileError) Error() string { return e.msg }
func (e *flagFileError) Unwrap() error { return e.err }

func fileError(flagName, path string, err error) error {
	msg := err.Error()
	for trimmed := true; trimmed; {
		trimmed = false
		for _, p := range []string{"nn: ", "checkpoint: ", path + ": "} {
			if rest, ok := strings.CutPrefix(msg, p); ok {
				msg, trimmed = rest, true
			}
		}
	}
	return &flagFileError{fmt.Sprintf("-%s %s: %s", flagName, path, msg), err}
}

// checkWritable checks, before the first step, that the output file of -flag can be
// written: its directory exists and takes a new file (a probe file is created and
// removed), and path is not a directory.
func checkWritable(flagName, path string) error {
	if path == "" {
		return nil
	}
	if err := cli.CheckOutput("-"+flagName, path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	probe, err := os.CreateTemp(dir, ".train-probe-*")
	if err != nil {
		return exit.Usagef("-%s %s: cannot write in %s: %s", flagName, path, dir, cli.StatReason(err))
	}
	name := probe.Name()
	probe.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("-%s %s: removing the probe file %s: %w", flagName, path, name, err)
	}
	return nil
}

func buildModel(o *options, shape []int, classes int, notes io.Writer) (*nn.Model, error) {
	return buildModelContext(context.Background(), o, shape, classes, notes)
}

// priorsAfterPlan, as a context value true, tells buildModelContext to leave a prior's map
// to its caller, which prints the plan before it (a Whitened layer computes its map at
// its first use otherwise).
type priorsAfterPlan struct{}

// buildModelContext is buildModel that stops computing a prior's map once ctx is done
// (SIGTERM).
func buildModelContext(ctx context.Context, o *options, shape []int, classes int, notes io.Writer) (*nn.Model, error) {
	spec, err := modelSpec(o, shape, classes)
	if err != nil {
		return nil, err
	}
	if deferred, _ := ctx.Value(priorsAfterPlan{}).(bool); !deferred {
		if err := cli.PreparePriorsContext(ctx, spec, notes); err != nil {
			return nil, err
		}
	}
	opts := []nn.Option{nn.WithLoss(o.lossOf())}
	if o.float64 {
		opts = append(opts, nn.WithDType(nn.Float64))
	}
	if o.set["seed"] || o.seedFromCheckpoint {
		opts = append(opts, nn.WithSeed(o.seed))
	}
	return nn.New(spec, o.physicalBatch, opts...)
}

// buildRule makes the update rule; a cosine schedule decays over o.planSteps (0 before

// trainerConfig builds the model and the trainer's configuration that train and each
// trial of a -tune search share: the physical batch, the model, the plan's step count,
// the rule, the feature cache (keyed like a checkpoint), sampling, augmentation and, for
// a private optimizer, the privacy. Notes on a lowered physical batch go to notes.
func (o *options) trainerConfig(train, test datasets.Dataset, name string, notes io.Writer) (*nn.Model, training.TrainerConfig, error) {
	return o.trainerConfigContext(context.Background(), train, test, name, notes)
}

// trainerConfigContext is trainerConfig that stops building the model (a prior's map)
// once ctx is done.
func (o *options) trainerConfigContext(ctx context.Context, train, test datasets.Dataset, name string, notes io.Writer) (*nn.Model, training.TrainerConfig, error) {
	if o.physicalBatchDefaulted {
		o.physicalBatch = min(o.physicalBatch, o.batch)
	}
	o.augmentPhysicalBatch()
	clampPhysicalBatch(o, train.Len(), notes)
	m, err := buildModelContext(ctx, o, train.Shape(), train.NumClasses(), notes)
	if err != nil {
		return nil, training.TrainerConfig{}, err
	}
	o.planSteps = accountant.StepsPerEpoch(train.Len(), o.batch) * o.epochs
	rule, err := buildRule(o)
	if err != nil {
		return nil, training.TrainerConfig{}, err
	}
	cfg := training.TrainerConfig{
		Train: train, Test: test, DatasetName: name, Rule: rule,
		BatchSize: o.batch, Epochs: o.epochs, Settings: o.settings(), EMA: o.ema,
		FeatureCache: o.featureCache, IterateAverage: o.iterateAverage(rule),
	}
	if o.featureCache != "" {
		// With a key, an edited cache file is refused, as a checkpoint is.
		if cfg.FeatureCacheKey, err = checkpointKey(); err != nil {
			return nil, training.TrainerConfig{}, err
		}
	}
	cfg.Sampling, _ = checkpoint.ParseSampling(o.sampling)
	if err := o.augmentConfig(&cfg); err != nil {
		return nil, training.TrainerConfig{}, err
	}
	if private(o.optimizer) {
		if cfg.Privacy, err = buildPrivacy(o, m); err != nil {
			return nil, training.TrainerConfig{}, err
		}
	}
	return m, cfg, nil
}

// the data is loaded: a rule to inspect, not to train).
func buildRule(o *options) (dpoptim.Rule, error) {
	sched, err := scheduleFor(o, o.planSteps)
	if err != nil {
		return nil, err
	}
	spec := lookupOptimizer(o.optimizer)
	if spec == nil {
		return nil, exit.Usagef("-optimizer %q: unknown", o.optimizer)
	}
	return spec.build(o, sched), nil
}

func buildPrivacy(o *options, m *nn.Model) (*training.Privacy, error) {
	p := &training.Privacy{Delta: o.delta}
	if o.accountant == "pld" {
		p.Accountant = []accountant.Option{accountant.WithAccountant(accountant.PLD{})}
	}
	switch o.clipping {
	case "flat":
		p.Clip = clipping.Flat{C: o.clip}
	case "per-layer":
		p.Clip = clipping.PerLayerEqual(o.clip, len(m.ParamLayers()))
	case "adaptive":
		p.Clip, p.Adaptive = clipping.Flat{C: o.clip}, o.adaptiveClip()
	}
	if o.set["noise"] {
		p.NoiseMultiplier = o.noise
	} else {
		p.TargetEpsilon = o.epsilon
	}
	if lookupOptimizer(o.optimizer).takesFlag("ls-sigma") {
		var layout []smoothing.Tensor
		for _, t := range m.Layout() {
			layout = append(layout, smoothing.Tensor{Name: t.Name, Shape: t.Shape})
		}
		var axes []smoothing.Option
		if o.lsAxis == "input" {
			axes = append(axes, smoothing.Axes(m.SmoothingAxes()...))
		}
		lap, err := smoothing.NewLaplacian[float64](o.lsSigma, layout, axes...)
		if err != nil {
			return nil, exit.Usagef("-ls-sigma %v: %v", o.lsSigma, err)
		}
		p.Smoother = lap
	}
	return p, nil
}
