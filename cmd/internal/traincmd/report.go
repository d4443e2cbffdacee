package traincmd

import (
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
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/nn"
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

func (r *reporter) epoch(m training.EpochMetrics, p training.Plan) {
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

func samplingName(s training.Sampling) string {
	if s == training.Poisson {
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

// frontEnd reports the one-time computation of a scatter model's features.
func (r *reporter) frontEnd(p training.FrontEndProgress) {
	what := p.FrontEnd
	// The GroupNorm (and Flatten) computed with the scattering are a detail here.
	if what == "scattering2d" || strings.HasPrefix(what, "scattering2d → ") {
		what = "scattering"
	}
	if !p.Done && p.Computed > 0 {
		r.hb.progress(p.Computed, p.Examples)
		return
	}
	if !p.Done {
		r.hb.doing(fmt.Sprintf("still computing %s features of %s images", what, cli.Thousands(p.Examples)))
		if p.CacheDir != "" {
			fmt.Fprintf(r.w, "%s features (cache %s)… ", what, p.CacheDir)
			return
		}
		fmt.Fprintf(r.w, "computing %s features… ", what)
		return
	}
	r.hb.doing("first step running (the first step of a run also sets up its buffers)")
	fmt.Fprintf(r.w, "%s images, %.1f s", cli.Thousands(p.Examples), p.Elapsed.Seconds())
	var problems []string
	for i, u := range p.Cache {
		sep := " ("
		if i > 0 {
			sep = "; "
		}
		switch {
		case u.Loaded:
			fmt.Fprintf(r.w, "%s%s set loaded from cache %s", sep, u.Set, u.File)
		case u.File == "":
			fmt.Fprintf(r.w, "%s%s set computed, not cached", sep, u.Set)
		default:
			fmt.Fprintf(r.w, "%s%s set computed, cached in %s", sep, u.Set, u.File)
		}
		if u.Problem != "" {
			problems = append(problems, u.Problem)
		}
	}
	if len(p.Cache) > 0 {
		fmt.Fprint(r.w, ")")
	}
	fmt.Fprintln(r.w)
	for _, pr := range problems {
		fmt.Fprintf(r.w, "warning: -feature-cache: %s\n", pr)
	}
	r.markStart(r.startStep) // the ETAs time the steps, not the features
}
