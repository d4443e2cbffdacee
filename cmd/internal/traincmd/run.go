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

// command is train's command line: its -help ends with the models and the recipes.
func command(flags *flag.FlagSet) *cli.Command {
	return &cli.Command{Name: "train", Flags: flags, Header: usageHeader, Footer: func(w io.Writer) {
		printModels(w)
		printRecipes(w)
	}, ParseHint: " (see train -help)", ArgsHint: " (flags only; see train -help)", CPU: true}
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
	if _, err := modelSpec(o, trainSet.Shape(), trainSet.NumClasses()); err != nil {
		return 0, err
	}
	if note, err := o.fitBatch(trainSet.Len()); err != nil {
		return 0, err
	} else if note != "" {
		notes = append(notes, note)
	}
	m, cfg, err := o.trainerConfigContext(ctx, trainSet, testSet, dataName, stderr)
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
