package traincmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
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
	if code, ok := command(flags).Parse(args, stdout, stderr); !ok {
		return code
	}
	o.set = map[string]bool{}
	flags.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.config != "" { // before the recipe: the command line, then -config, then -recipe
		names, err := cli.ApplyConfig(flags, o.config, "config", o.set)
		if err != nil {
			fmt.Fprintf(stderr, "train: %s\n", exit.OneLine(err.Error()))
			return exit.Usage
		}
		for _, name := range names {
			o.set[name] = true
		}
	}
	if err := o.applyRecipe(flags); err != nil {
		fmt.Fprintf(stderr, "train: %s\n", exit.OneLine(err.Error()))
		return exit.Usage
	}
	if err := o.applyTuneRecipe(); err != nil { // recipe.go: -tune-recipe becomes -tune
		fmt.Fprintf(stderr, "train: %s\n", exit.OneLine(err.Error()))
		return exit.Usage
	}

	o.budget.command = cli.CommandLine("train", args)
	var err error
	if o.dist, err = startDistributed(o.distributed); err != nil {
		return status(0, err, stderr)
	}
	if o.noCheckpoint && (o.tune == "" || o.checkpoint != "") {
		return status(0, exit.Usagef("-no-checkpoint applies to a -tune search without -checkpoint"), stderr)
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

// command is train's command line: its -help ends with the models and the recipes.
func command(flags *flag.FlagSet) *cli.Command {
	return &cli.Command{Name: "train", Flags: flags, Header: usageHeader, Footer: func(w io.Writer) {
		printModels(w)
		printRecipes(w)
	}, ParseHint: " (see train -help)", ArgsHint: " (flags only; see train -help)", CPU: true}
}

// train runs the parsed options o: it resumes or starts the run, loads its data, builds
// the trainer, reserves the budget, trains, and writes the outputs and the summary.
func train(ctx context.Context, o *options, flags *flag.FlagSet, start time.Time, stdout, stderr io.Writer) (int, error) {
	if o.dist.leader() { // in a -distributed job rank 0 alone writes -checkpoint
		lock, err := lockCheckpoint(o) // before any work: one writer of -checkpoint at a time
		if err != nil {
			return 0, err
		}
		defer lock.Unlock()
	}
	r, err := resumeRun(o, flags, stderr)
	if err != nil {
		return 0, err
	}
	if err := o.complete(r.ck); err != nil {
		return 0, err
	}
	if o.prepareOnly {
		return prepareOnly(ctx, o, stderr)
	}
	d, err := loadRunData(o)
	if err != nil {
		return 0, err
	}
	if o.printModel {
		return exit.OK, printModel(o, d.train.Shape(), d.train.NumClasses(), stdout)
	}
	s, rule, err := newSession(ctx, o, r, d, stderr)
	if err != nil {
		return 0, err
	}
	defer s.out.close()
	if o.dist.leader() { // one record per job: rank 0's ledger is the job's
		if s.budget, err = reserveBudget(o, s.trainer, d.fingerprint, stderr); err != nil { // before any output file is touched
			return 0, err
		}
	}
	if s.metrics, err = openMetrics(o.metrics, r.ck != nil); err != nil {
		s.budget.settle() // no step ran: settles at none
		return 0, err
	}
	defer s.metrics.close()
	if err := s.begin(r.ck, d, rule); err != nil {
		return 0, err
	}
	// The plan and the budget first, then a prior's map (minutes the first time, stoppable).
	if err := cli.PreparePriorsContext(ctx, d.spec, stderr); err != nil {
		s.budget.settle() // no step ran: settles at none
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "train: %s; no step ran\n", exit.OneLine(err.Error()))
			return exit.Interrupted, nil
		}
		return 0, err
	}
	res, interrupted, err := s.run(ctx)
	if err != nil {
		return 0, err
	}
	return s.finish(res, interrupted, r.ck != nil, d, start, stdout)
}

// resumed is what a run continues: the checkpoint of -resume (nil: a fresh run) and, with
// -allow-rewind, the newer state of the run at -checkpoint whose steps it keeps (nil:
// none).
type resumed struct{ ck, newest *checkpoint.Training }

// resumeRun loads -resume's checkpoint and takes the flags not given from it, and checks
// what -checkpoint would overwrite (lock.go, rewind.go).
func resumeRun(o *options, flags *flag.FlagSet, stderr io.Writer) (r resumed, err error) {
	if o.resume != "" {
		if r.ck, _, err = o.protect.signing(stderr).Load("resume", o.resume); err != nil {
			return r, err
		}
		if err := o.checkResumeIterates(r.ck); err != nil {
			return r, err
		}
		if err := o.applyCheckpoint(r.ck, flags); err != nil {
			return r, err
		}
		if err := o.applyCheckpointSplits(r.ck, stderr); err != nil { // validation.go
			return r, err
		}
	}
	if err := checkTarget(o, r.ck, stderr); err != nil {
		return r, err
	}
	r.newest, err = newerCheckpoint(o, r.ck, stderr)
	return r, err
}

// complete fills the defaults, validates the options (and a resumed run's against its
// checkpoint ck) and checks that the output files can be written.
func (o *options) complete(ck *checkpoint.Training) error {
	o.resolve()
	if err := o.validate(); err != nil {
		return err
	}
	o.dist.dropOutputs(o) // only rank 0 writes
	if ck != nil {
		if err := o.checkResumedValidation(ck); err != nil {
			return err
		}
		if err := o.checkResumedData(ck); err != nil { // validation.go
			return err
		}
	}
	if ck == nil && private(o.optimizer) && !o.set["noise"] {
		o.calibratedFor = o.epsilon
		o.calibratedForSetting = strconv.FormatFloat(o.epsilon, 'g', -1, 64)
	}
	for _, out := range []struct{ flag, path string }{{"checkpoint", o.checkpoint}, {"plot", o.plot}, {"metrics", o.metrics}} {
		if err := checkWritable(out.flag, out.path); err != nil {
			return err
		}
	}
	return nil
}

// runData is the data a run trains and evaluates on.
type runData struct {
	train, test datasets.Dataset // with -validation, test is the held-out part of the training set
	name        string
	notes       []string // what the user should know about the data
	// fingerprint is the data set the run is charged to in the budget store: the
	// training set before -validation's split.
	fingerprint string
	// spec is the network, whose priors' maps train prepares after printing the plan.
	spec nn.Spec
}

// loadRunData loads the data, splits off -validation's part, and fits the model's
// default and the batch to it.
func loadRunData(o *options) (*runData, error) {
	trainSet, testSet, dataName, notes, err := loadData(o)
	if err != nil {
		return nil, err
	}
	fingerprint := datasets.ContentFingerprint(trainSet) // before -validation's split: the whole set is charged
	if o.validation > 0 {
		// The held-out part of the training set replaces the test set, which is
		// never evaluated; the trainer and the accountant see the rest only.
		all := trainSet.Len()
		var more []string
		if trainSet, testSet, more, err = splitValidation(o, trainSet); err != nil {
			return nil, err
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
			return nil, exit.Usagef("-dataset %s: %v", o.dataset, err)
		}
	}
	if o.printModel {
		return &runData{train: trainSet}, nil // train prints the model and stops
	}
	spec, err := modelSpec(o, trainSet.Shape(), trainSet.NumClasses())
	if err != nil {
		return nil, err
	}
	if note, err := o.fitBatch(trainSet.Len()); err != nil {
		return nil, err
	} else if note != "" {
		notes = append(notes, note)
	}
	return &runData{train: trainSet, test: testSet, name: dataName, notes: notes, fingerprint: fingerprint, spec: spec}, nil
}

// newSession builds the trainer, with the session's callbacks, in the state the run
// resumes (r); rule is its update rule.
func newSession(ctx context.Context, o *options, r resumed, d *runData, stderr io.Writer) (s *session, rule dpoptim.Rule, err error) {
	m, cfg, err := o.trainerConfigContext(context.WithValue(ctx, priorsAfterPlan{}, true), d.train, d.test, d.name, stderr)
	if err != nil {
		return nil, nil, err
	}
	if o.validation == 0 {
		cfg.Data.ContentFingerprint = d.fingerprint // computed once: the budget store's key is the resume check's
	}
	if o.set["seed"] || o.seedFromCheckpoint {
		seed := o.seed
		cfg.Seed = &seed
	}
	cfg.Reducer = o.dist.reducer()
	s = &session{o: o, out: newReporter(stderr), savedStep: -1, stderr: stderr}
	cfg.Callbacks.OnStep = s.onStep
	cfg.Callbacks.OnEpoch = s.onEpoch
	cfg.Callbacks.OnFrontEnd = s.out.frontEnd
	if s.trainer, err = training.NewTrainer(m, cfg); err != nil {
		if errors.Is(err, training.ErrConfig) {
			return nil, nil, exit.Usagef("%v", err)
		}
		return nil, nil, err
	}
	if r.newest != nil {
		// Take over the newest state of the run first, so that the rewind to ck keeps
		// the steps that the newest copy has and ck does not.
		if err := s.trainer.Restore(r.newest); err != nil {
			return nil, nil, fmt.Errorf("-checkpoint %s: %w", o.checkpoint, err)
		}
		if err := s.trainer.Restore(r.ck, training.AllowRewind()); err != nil {
			return nil, nil, fmt.Errorf("-resume %s -allow-rewind: %w", o.resume, err)
		}
	} else if r.ck != nil {
		if err := s.trainer.Restore(r.ck); err != nil {
			return nil, nil, fileError("resume", o.resume, err)
		}
	}
	warnUncheckedContent(o, r.ck, stderr)
	return s, cfg.Rule, nil
}

// begin prints the plan and the data's notes, notes what the ledger on disk records (the
// resumed checkpoint ck's, or none), and waits for the job's other ranks.
func (s *session) begin(ck *checkpoint.Training, d *runData, rule dpoptim.Rule) error {
	o := s.o
	s.metrics.ema, s.metrics.rate = o.ema, rateSchedule(o, rule, o.planSteps)
	s.metrics.split = o.evalSplit()
	s.out.header(o, s.trainer, d.train, d.test, d.name)
	o.dist.describe(s.stderr, d.train.Len())
	for _, n := range d.notes {
		fmt.Fprintf(s.stderr, "data: %s\n", n)
	}

	s.recorded.step = s.trainer.Steps()
	if ck != nil && ck.Ledger != nil {
		if spent, err := ck.Ledger.Epsilon(ck.Plan.Delta); err == nil {
			s.recorded.eps = spent.Epsilon
		}
	}
	if err := o.dist.ready(); err != nil {
		s.budget.settle() // no step ran: settles at none
		return err
	}
	s.budget.report()
	return nil
}

// run trains until the plan's end or an interruption (SIGINT, SIGTERM: interrupted,
// not an error) and settles the budget at the steps taken.
func (s *session) run(ctx context.Context) (res training.Result, interrupted bool, err error) {
	s.out.markStart(s.trainer.Steps())
	res, runErr := s.trainer.Run(ctx)
	s.out.finishBar()
	s.budget.settle()
	interrupted = runErr != nil && (errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded))
	if runErr == nil || interrupted {
		s.o.dist.ran() // every rank stopped after the same step
	}
	if runErr != nil && !interrupted {
		s.reportUnrecorded()
		if errors.Is(runErr, nn.ErrParams) { // a step's parameters overflowed
			kept, try := s.divergenceAdvice()
			return res, false, fmt.Errorf("training diverged at step %d of %d: %w (%s); try %s", res.Steps+1, s.trainer.Plan().Steps, runErr, kept, try)
		}
		return res, false, runErr
	}
	return res, interrupted, nil
}

// finish writes the last checkpoint, the plot and the metrics, and reports: where an
// interrupted run stopped, else the summary on stdout.
func (s *session) finish(res training.Result, interrupted, resumed bool, d *runData, start time.Time, stdout io.Writer) (int, error) {
	o, stderr := s.o, s.stderr
	if o.checkpoint != "" && s.savedStep != res.Steps {
		// onEpoch saved every epoch end; save the state they did not cover (an interrupted
		// epoch, or a resumed run with nothing left to do).
		if err := s.save(); err != nil {
			s.reportUnrecorded()
			return 0, err
		}
	}
	if o.plot != "" {
		if err := writePlot(o.plot, s.metrics.records, s.trainer.Plan(), plotTitle(o, s.trainer, d.name), o.evalSplit(), o.lossOf()); err != nil {
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
	sum := newSummary(o, s.trainer, res, d.name, d.train, d.test, time.Since(start))
	sum.setNoiseOrigin(o, resumed)
	sum.DatasetSpend = s.budget.datasetSpend()
	if o.json {
		if err := sum.writeJSON(stdout); err != nil {
			return 0, err
		}
	} else {
		sum.writeText(stdout)
	}
	return exit.OK, nil
}
