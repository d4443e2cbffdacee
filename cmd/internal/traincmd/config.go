package traincmd

import (
	"context"
	"io"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/smoothing"
	"github.com/privtrain/privtrain/training"
)

// The model and the trainer's configuration built from the options: one place that
// turns flags into a training.TrainerConfig, for a run (run.go) and each -tune trial.

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
		Data:         training.Data{Train: train, Test: test, Name: name},
		Rule:         rule,
		Schedule:     training.Schedule{BatchSize: o.batch, Epochs: o.epochs},
		Settings:     o.settings(),
		Averaging:    training.Averaging{EMA: o.ema, Iterate: o.iterateAverage(rule)},
		FeatureCache: training.FeatureCache{Dir: o.featureCache},
	}
	if o.featureCache != "" {
		// With a key, an edited cache file is refused, as a checkpoint is.
		if cfg.FeatureCache.Key, err = checkpointKey(); err != nil {
			return nil, training.TrainerConfig{}, err
		}
	}
	cfg.Schedule.Sampling, _ = training.ParseSampling(o.sampling)
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
