package traincmd

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/internal/cpupath"
	"github.com/privtrain/privtrain/internal/jsonnum"
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// plainEvery is how often a long epoch prints a progress line when stderr is not a
// terminal; drawEvery how often the terminal's progress line is redrawn.
const (
	plainEvery = 30 * time.Second
	drawEvery  = 100 * time.Millisecond
)

// reporter writes the plan and the progress to stderr: a progress line redrawn in place
// on a terminal, plain lines otherwise. Both give the epoch's and the whole run's ETA.
type reporter struct {
	w         io.Writer
	tty       bool
	now       func() time.Time // time.Now; a test's clock
	lastPlain time.Time
	lastDraw  time.Time
	drawn     bool // a progress line is on the terminal
	cols      int  // the terminal's width; the progress line is cut to fit
	// The ETAs extrapolate the time per step since the first step of this process
	// (a resumed run does not count the steps of earlier processes).
	started   time.Time
	startStep int        // steps done before this process's first step
	split     string     // the evaluated split's name in the epoch lines ("": test)
	hb        *heartbeat // w's, when not a terminal; nil on a terminal
}

func newReporter(w io.Writer) *reporter {
	r := &reporter{w: w, now: time.Now}
	r.lastPlain = r.now()
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		r.tty = true
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil {
			r.cols = cols
		}
	} else {
		r.hb = newHeartbeat(w, r.now)
		r.w = r.hb
		r.hb.start(plainEvery / 3)
	}
	return r
}

// close stops the reporter's heartbeat.
func (r *reporter) close() { r.hb.close() }

// header prints what is about to happen, before the first step.
func (r *reporter) header(o *options, t *training.Trainer, train, test datasets.Dataset, dataName string) {
	m, p := t.Model(), t.Plan()
	r.split = o.evalSplit()
	fmt.Fprintf(r.w, "train: %s on %s (%s parameters, %s); data %s: %s train / %s %s examples of %s\n",
		t.Optimizer().Name(), m.Name(), cli.Thousands(m.NumParams()), m.DType(), dataName,
		cli.Thousands(train.Len()), cli.Thousands(test.Len()), o.evalSplit(), exampleShape(train.Shape()))
	if line := o.recipeLine(); line != "" {
		fmt.Fprintf(r.w, "recipe: %s\n", line)
	}
	if m.Engine() == nn.EngineGorgonia {
		// A layer without a native kernel must never slow a run down silently.
		fmt.Fprintf(r.w, "engine: Gorgonia (much slower than the native engine): %s\n", m.EngineReason())
	}
	fmt.Fprintf(r.w, "plan: %s sampling, q = %.4g (expected batch %d, physical batch %d), %d epochs × %d steps = %d steps; %s\n",
		samplingName(p.Sampling), p.SampleRate, p.BatchSize, p.PhysicalBatch, p.Epochs, p.StepsPerEpoch, p.Steps, lrString(o))
	if p.Private {
		how := fmt.Sprintf("noise multiplier z = %.5g (given)", p.NoiseMultiplier)
		switch {
		case o.resume != "":
			how = fmt.Sprintf("noise multiplier z = %.5g %s", p.NoiseMultiplier, resumedNoise(o.calibratedFor, p.TargetEpsilon))
		case p.Calibrated:
			how = fmt.Sprintf("target ε = %g → noise multiplier z = %.5g (calibrated)", p.TargetEpsilon, p.NoiseMultiplier)
		}
		if a := t.Ledger().Accountant(); a.Name() != "rdp" {
			fmt.Fprintf(r.w, "privacy: %s, clip %s; the whole plan spends ε = %.4f at δ = %g (%s)\n",
				how, p.ClipRule, p.Spent.Epsilon, p.Delta, a.Description())
		} else {
			fmt.Fprintf(r.w, "privacy: %s, clip %s; the whole plan spends ε = %.4f at δ = %g (RDP, optimal order %g)\n",
				how, p.ClipRule, p.Spent.Epsilon, p.Delta, p.Spent.Order)
		}
		if t.GradientNoiseMultiplier() != p.NoiseMultiplier && strings.HasPrefix(p.ClipRule, "adaptive") {
			fmt.Fprintf(r.w, "adaptive clipping: the gradient's noise multiplier is z_Δ = %.5g, the noisy count of unclipped examples takes the rest of z = %.5g (same ε); C now %.4g\n",
				t.GradientNoiseMultiplier(), p.NoiseMultiplier, t.ClipNorm())
		}
		fmt.Fprintf(r.w, "noise: %s\n", noiseDescription(t.Noise()))
	} else {
		fmt.Fprintf(r.w, "privacy: none: %s adds no noise and does not clip; ε = ∞\n", o.optimizer)
	}
	if a := o.iterateAverage(nil); a != nil {
		fmt.Fprintf(r.w, "averaging: %s of θ_0 … θ_{T−1} (DP-LSSGD's averaged output, -average-iterates %s); evaluations use the average, training goes on from the raw iterate; post-processing, no privacy cost\n", a.Name(), o.averageIterates)
	}
	if l := m.Loss(); l != nn.CrossEntropy {
		fmt.Fprintf(r.w, "loss: %s, down-weighting confidently classified examples (Lin et al. 2017); the reported losses are this loss; no privacy cost: each example's gradient is clipped as before\n", l.Describe())
	}
	if o.ema > 0 {
		fmt.Fprintf(r.w, "averaging: EMA of the parameters with β = %g (β_t = min(β, (1+t)/(10+t))); evaluations use the average, training goes on from the raw parameters; post-processing, no privacy cost\n", o.ema)
	}
	o.augmentHeader(r.w)
	if s := t.Steps(); s > 0 {
		spent, _ := t.Spent()
		fmt.Fprintf(r.w, "resumed: from %s at step %d of %d (%s), ε spent so far %s\n", o.resume, s, p.Steps, epochPosition(s, p), epsString(spent.Epsilon))
	}
	if len(o.fromCheckpoint) > 0 {
		fmt.Fprintf(r.w, "resumed: settings from the checkpoint: %s\n", strings.Join(slices.Sorted(slices.Values(o.fromCheckpoint)), ", "))
	}
	for _, w := range p.Warnings() {
		fmt.Fprintf(r.w, "warning: %s\n", w)
	}
}

// markStart records when training starts (after the header and any setup), the origin
// of the ETAs.
func (r *reporter) markStart(stepsDone int) {
	r.started, r.startStep = r.now(), stepsDone
	r.hb.doing(fmt.Sprintf("step %d running (this process's first)", stepsDone+1))
}

// etas extrapolates the time per step of this process to the rest of the epoch and of
// the run.
func (r *reporter) etas(p training.StepProgress) (epoch, run time.Duration) {
	done := p.GlobalStep - r.startStep
	if done <= 0 {
		return -1, -1
	}
	per := r.now().Sub(r.started) / time.Duration(done)
	return per * time.Duration(p.StepsPerEpoch-p.Step), per * time.Duration(p.TotalSteps-p.GlobalStep)
}

func (r *reporter) step(p training.StepProgress) {
	if r.started.IsZero() {
		r.markStart(p.GlobalStep - 1)
	}
	epochs := (p.TotalSteps + p.StepsPerEpoch - 1) / p.StepsPerEpoch
	epochETA, runETA := r.etas(p)
	desc := fmt.Sprintf("epoch %d/%d  step %d/%d  loss %.3f  ε %s  ETA %s, run %s",
		p.Epoch, epochs, p.Step, p.StepsPerEpoch, p.Loss, epsString(p.Epsilon), etaString(epochETA), etaString(runETA))
	now := r.now()
	if !r.tty {
		if p.GlobalStep < p.TotalSteps {
			r.hb.doing(fmt.Sprintf("step %d/%d of epoch %d/%d running after %s", p.Step%p.StepsPerEpoch+1, p.StepsPerEpoch, p.Epoch+p.Step/p.StepsPerEpoch, epochs, desc))
		}
		if now.Sub(r.lastPlain) >= plainEvery && p.Step != p.StepsPerEpoch {
			fmt.Fprintln(r.w, desc)
			r.lastPlain = now
		}
		return
	}
	if now.Sub(r.lastDraw) < drawEvery && p.Step != 1 {
		return
	}
	const width = 20
	filled := width * p.Step / p.StepsPerEpoch
	line := []rune(strings.Repeat("█", filled) + strings.Repeat("·", width-filled) + " " + desc)
	cols := r.cols
	if cols <= 0 {
		cols = 80
	}
	if len(line) > cols-1 { // a wrapped line could not be redrawn in place
		line = line[:cols-1]
	}
	fmt.Fprintf(r.w, "\r\033[K%s", string(line))
	r.lastDraw, r.drawn = now, true
}

// etaString formats an ETA to the second ("?" before there is a rate).
func etaString(d time.Duration) string {
	if d < 0 {
		return "?"
	}
	return d.Round(time.Second).String()
}

// finishBar leaves an unfinished epoch's progress line (an interrupted run) on its own
// line.
func (r *reporter) finishBar() {
	if r.drawn {
		fmt.Fprintln(r.w)
		r.drawn = false
	}
}

func (r *reporter) epoch(m training.EpochMetrics, p checkpoint.Plan) {
	if r.drawn {
		fmt.Fprint(r.w, "\r\033[K") // the epoch's line replaces its progress line
		r.drawn = false
	}
	eta := ""
	if m.Step < p.Steps && !r.started.IsZero() {
		// the per-step rate now includes this epoch's evaluation
		per := r.now().Sub(r.started) / time.Duration(max(m.Step-r.startStep, 1))
		eta = "  run ETA " + etaString(per*time.Duration(p.Steps-m.Step))
	}
	split := evalTest
	if r.split == evalValidation {
		split = "val"
	}
	fmt.Fprintf(r.w, "epoch %*d/%d  step %*d  loss %.4f  train %s  %s %s  ε %s  %s%s\n",
		len(fmt.Sprint(p.Epochs)), m.Epoch, p.Epochs, len(fmt.Sprint(p.Steps)), m.Step,
		m.TrainLoss, percent(m.TrainAccuracy), split, percent(m.TestAccuracy), epsString(m.Epsilon),
		(time.Duration(m.Seconds*10) * time.Second / 10).String(), eta)
	r.lastPlain = r.now()
}

func percent(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", 100*v)
}

func epsString(eps float64) string {
	if math.IsInf(eps, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.3f", eps)
}

func samplingName(s checkpoint.Sampling) string {
	if s == checkpoint.Poisson {
		return "Poisson"
	}
	return "shuffled fixed-size"
}

func noiseDescription(noise string) string {
	switch {
	case noise == "secure":
		return "secure (ChaCha8 seeded from " + privrand.SecureOrigin + ")"
	case strings.HasPrefix(noise, "seeded"):
		return noise + ": reproducible, NOT private against anyone who knows the seed"
	}
	return noise
}

// exampleShape describes an example's shape: "3 features" for a table, "1×28×28" else.
func exampleShape(shape []int) string {
	if len(shape) == 1 {
		return fmt.Sprintf("%d features", shape[0])
	}
	return cli.Shape(shape)
}

// summary is the final report; its JSON form is what -json prints.
type summary struct {
	TestAccuracy      *float64 `json:"test_accuracy"`
	TestLoss          *float64 `json:"test_loss"`
	Private           bool     `json:"private"`
	Epsilon           *float64 `json:"epsilon"` // null: ε = ∞ (not private, or no finite bound)
	Delta             float64  `json:"delta"`
	RDPOrder          float64  `json:"rdp_order,omitempty"`
	Accountant        string   `json:"accountant"`
	AccountantInfo    string   `json:"accountant_description,omitempty"` // method and discretisation
	TargetEpsilon     float64  `json:"target_epsilon,omitempty"`
	NoiseMultiplier   float64  `json:"noise_multiplier"`
	Calibrated        bool     `json:"noise_calibrated"`     // z was calibrated for target_epsilon
	CalibratedFor     float64  `json:"noise_calibrated_for"` // the ε z was calibrated for (0: z given)
	NoiseResumed      bool     `json:"noise_from_checkpoint"`
	Clip              float64  `json:"clip,omitempty"`
	Clipping          string   `json:"clipping,omitempty"`
	Noise             string   `json:"noise"`
	Sampling          string   `json:"sampling"`
	SampleRate        float64  `json:"sample_rate"`
	Batch             int      `json:"batch"`
	PhysicalBatch     int      `json:"physical_batch"`
	Augmult           int      `json:"augmult,omitempty"` // views per example (-augmult), absent without
	Augment           string   `json:"augment,omitempty"` // the views (-augment)
	Steps             int      `json:"steps"`
	Epochs            int      `json:"epochs"`
	Model             string   `json:"model"`
	Parameters        int      `json:"parameters"`
	Optimizer         string   `json:"optimizer"`
	LearningRate      float64  `json:"learning_rate"`
	Dataset           string   `json:"dataset"`
	TrainExamples     int      `json:"train_examples"`
	TestExamples      int      `json:"test_examples"`
	WallSeconds       float64  `json:"wall_seconds"`
	TrainSeconds      float64  `json:"train_seconds"`
	ExamplesPerSecond float64  `json:"examples_per_second"`
	// CPUPath is the native kernels' path the run took (internal/cpupath): "avx512", "avx2",
	// "neon" or "generic"; CPUPathForced is set when PRIVTRAIN_CPU chose a lower one than
	// the CPU's best. The time line names it (cpupath.Describe).
	CPUPath       string `json:"cpu_path"`
	CPUPathForced bool   `json:"cpu_path_forced,omitempty"`

	// FinalClip and GradientNoise are set for -clipping adaptive: C after the last step
	// and the gradient's noise multiplier z_Δ (noise_multiplier is the z the ledger
	// records).
	FinalClip     float64 `json:"final_clip,omitempty"`
	GradientNoise float64 `json:"gradient_noise_multiplier,omitempty"`

	// DatasetSpend is the data set's spend, every run recorded in the budget store on it
	// composed (this one included): epsilon above is this run's lineage's (its ledger).
	// Absent when the run recorded nothing (a -distributed job's other ranks) or could
	// not settle.
	DatasetSpend *datasetSpend `json:"dataset_budget,omitempty"`

	LRSchedule  string  `json:"lr_schedule"`  // -lr-schedule
	WarmupSteps int     `json:"warmup_steps"` // -warmup-steps (0: none)
	EMA         float64 `json:"ema"`          // -ema: the evaluated split's metrics are the parameter average's (0: none, the raw parameters')
	// Loss is -loss when it is not the cross-entropy ("focal:2"; absent: cross-entropy), named
	// loss_function as in evaluate's JSON (the -metrics lines' "loss" is a number):
	// test_loss is this loss.
	Loss string `json:"loss_function,omitempty"`
	// AverageIterates is -average-iterates (uniform, step; absent: off): the evaluated
	// split's metrics are the average of the iterates θ_0 … θ_{T−1}.
	AverageIterates string `json:"average_iterates,omitempty"`

	Recipe string `json:"recipe,omitempty"` // -recipe NAME (absent without)

	// EvalSplit names the split that test_accuracy, test_loss and test_examples are
	// of: "test", or "validation", the part of the training set held out by
	// -validation ValidationFraction with -split-seed SplitSeed (the field names stay
	// for the scripts that read them).
	EvalSplit          string  `json:"eval_split"`
	ValidationFraction float64 `json:"validation_fraction,omitempty"`
	SplitSeed          *uint64 `json:"validation_split_seed,omitempty"`
}

func newSummary(o *options, t *training.Trainer, res training.Result, dataName string, train, test datasets.Dataset, wall time.Duration) *summary {
	p := t.Plan()
	s := &summary{
		TestAccuracy:    jsonnum.FiniteOrNil(res.TestAccuracy),
		TestLoss:        jsonnum.FiniteOrNil(res.TestLoss),
		Private:         p.Private,
		Epsilon:         jsonnum.FiniteOrNil(res.Spent.Epsilon),
		Delta:           p.Delta,
		TargetEpsilon:   p.TargetEpsilon,
		NoiseMultiplier: p.NoiseMultiplier,
		Calibrated:      p.Calibrated,
		Clip:            p.Clip,
		Clipping:        p.ClipRule,
		Noise:           t.Noise(),
		Sampling:        p.Sampling.String(),
		SampleRate:      p.SampleRate,
		Batch:           p.BatchSize,
		PhysicalBatch:   p.PhysicalBatch,
		Steps:           res.Steps,
		Epochs:          res.Epochs,
		Model:           t.Model().Name(),
		Parameters:      t.Model().NumParams(),
		Optimizer:       t.Optimizer().Name(),
		LearningRate:    o.lr,
		Dataset:         dataName,
		TrainExamples:   train.Len(),
		TestExamples:    test.Len(),
		WallSeconds:     wall.Seconds(),
		TrainSeconds:    res.Elapsed.Seconds(),
		CPUPath:         cpupath.Current().String(),
		CPUPathForced:   cpupath.Current() != cpupath.Supported()[0],
		LRSchedule:      o.lrSchedule,
		WarmupSteps:     o.warmupSteps,
		EMA:             o.ema,
		Loss:            lossJSON(t.Model().Loss()),
		AverageIterates: averageIteratesJSON(o.averageIterates),
		Recipe:          o.recipe,
		EvalSplit:       o.evalSplit(),
	}
	if o.validation > 0 {
		seed := o.own.SplitSeed
		s.ValidationFraction, s.SplitSeed = o.validation, &seed
	}
	if p.Private && strings.HasPrefix(p.ClipRule, "adaptive") {
		s.FinalClip, s.GradientNoise = t.ClipNorm(), t.GradientNoiseMultiplier()
	}
	if p.Private {
		a := t.Ledger().Accountant()
		s.AccountantInfo = a.Description()
		if a.Name() == "rdp" {
			s.RDPOrder = res.Spent.Order
			s.Accountant = "rdp/" + t.Ledger().Conversion().String()
		} else {
			s.Accountant = a.Name()
		}
	} else {
		s.Accountant = "none"
	}
	if o.aug.k > 0 {
		a, _ := o.augment()
		s.Augmult, s.Augment = o.aug.k, augmentSpec(a)
	}
	if res.Elapsed > 0 {
		s.ExamplesPerSecond = float64(res.Examples) / res.Elapsed.Seconds()
	}
	return s
}

// setNoiseOrigin says where the noise multiplier came from. A resumed run keeps the
// checkpoint's z, calibrated (if at all) for the ε its run started with; -epsilon on
// resume only changes the budget the rest of the run must stay within.
func (s *summary) setNoiseOrigin(o *options, resumed bool) {
	if !s.Private {
		return
	}
	s.CalibratedFor = o.calibratedFor
	s.NoiseResumed = resumed
	s.Calibrated = o.calibratedFor > 0 && o.calibratedFor == s.TargetEpsilon
}

// resumedNoise describes the noise multiplier of a resumed run, in parentheses.
func resumedNoise(calibratedFor, target float64) string {
	how := "given with -noise"
	if calibratedFor > 0 {
		how = fmt.Sprintf("calibrated for ε = %g when the run started", calibratedFor)
	}
	budget := ""
	switch {
	case target > 0 && target != calibratedFor:
		budget = fmt.Sprintf("; this run's budget ε = %g", target)
	case target == 0:
		budget = "; no ε budget"
	}
	return fmt.Sprintf("(the checkpoint's, %s%s)", how, budget)
}

func (s *summary) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	return enc.Encode(s)
}

func (s *summary) writeText(w io.Writer) {
	acc := "– (no evaluation ran)"
	if s.TestAccuracy != nil {
		acc = fmt.Sprintf("%.2f%% on %s %s examples (loss %.4f)", 100**s.TestAccuracy, cli.Thousands(s.TestExamples), s.EvalSplit, *s.TestLoss)
	}
	if s.EvalSplit == evalValidation {
		fmt.Fprintf(w, "validation accuracy %s\n", acc)
		fmt.Fprintf(w, "validation      -validation %g of the training set (split seed %d), not the test set; choosing hyper-parameters by it is not covered by ε\n", s.ValidationFraction, *s.SplitSeed)
	} else {
		fmt.Fprintf(w, "test accuracy   %s\n", acc)
	}
	if s.Private {
		conv := map[string]string{"rdp/balle": "Balle et al. 2020 conversion", "rdp/classic": "classic conversion"}[s.Accountant]
		eps := "∞" // no finite ε: the JSON summary's null
		if s.Epsilon != nil {
			eps = fmt.Sprintf("%.4f", *s.Epsilon)
		}
		if strings.HasPrefix(s.Accountant, "rdp/") {
			fmt.Fprintf(w, "privacy         (ε = %s, δ = %g) by the RDP accountant (%s), optimal order %g\n", eps, s.Delta, conv, s.RDPOrder)
		} else {
			name := strings.ToUpper(s.Accountant)
			fmt.Fprintf(w, "privacy         (ε = %s, δ = %g) by the %s accountant (%s)\n", eps, s.Delta, name, strings.TrimPrefix(s.AccountantInfo, name+", "))
		}
		how := "(given)"
		switch {
		case s.NoiseResumed:
			how = resumedNoise(s.CalibratedFor, s.TargetEpsilon)
		case s.Calibrated:
			how = fmt.Sprintf("(calibrated for ε = %g)", s.TargetEpsilon)
		}
		fmt.Fprintf(w, "noise           multiplier z = %.5g %s, clip %s\n", s.NoiseMultiplier, how, s.Clipping)
		if d := s.DatasetSpend; d != nil {
			eps := "∞"
			if d.Epsilon != nil {
				eps = fmt.Sprintf("%.4g", *d.Epsilon)
			}
			fmt.Fprintf(w, "data set budget ε = %s at δ = %g (%s): data set %s, every run recorded on it composed; the privacy line is this run's (its ledger's)\n", eps, d.Delta, d.Method, d.Fingerprint[:12])
		}
		if s.FinalClip > 0 {
			fmt.Fprintf(w, "adaptive clip   final C = %.4g; gradient noise multiplier z_Δ = %.5g (the count of unclipped examples takes the rest of z)\n", s.FinalClip, s.GradientNoise)
		}
		fmt.Fprintf(w, "noise source    %s\n", noiseDescription(s.Noise))
	} else {
		fmt.Fprintf(w, "privacy         ε = ∞: %s is not private (no clipping, no noise)\n", s.Optimizer)
	}
	fmt.Fprintf(w, "sampling        %s, q = %.4g (expected batch %d of %s), %d steps in %d epochs\n", samplingName(mustSampling(s.Sampling)), s.SampleRate, s.Batch, cli.Thousands(s.TrainExamples), s.Steps, s.Epochs)
	fmt.Fprintf(w, "model           %s, %s parameters, %s\n", s.Model, cli.Thousands(s.Parameters), s.Optimizer)
	if l, err := nn.ParseLoss(s.Loss); err == nil {
		fmt.Fprintf(w, "loss            %s: the %s loss above is this loss\n", l.Describe(), s.EvalSplit)
	}
	if s.Recipe != "" {
		if r := lookupRecipe(s.Recipe); r != nil {
			fmt.Fprintf(w, "recipe          %s (%s; flags given override its values)\n", r.name, r.provenance)
		}
	}
	if s.EMA > 0 {
		fmt.Fprintf(w, "averaging       EMA of the parameters, β = %g: the %s accuracy is the average's\n", s.EMA, s.EvalSplit)
	}
	fmt.Fprintf(w, "time            %s training (%s wall), %s examples/s, CPU path %s\n", roundDuration(s.TrainSeconds), roundDuration(s.WallSeconds), cli.Thousands(int(math.Round(s.ExamplesPerSecond))), cpupath.Describe())
}

func mustSampling(s string) checkpoint.Sampling {
	v, _ := checkpoint.ParseSampling(s)
	return v
}

func roundDuration(sec float64) string {
	return (time.Duration(sec*10) * time.Second / 10).String()
}
