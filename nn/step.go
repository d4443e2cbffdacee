package nn

import (
	"errors"
	"fmt"

	"github.com/privtrain/privtrain/clipping"
)

// Batch is one physical batch of BatchSize rows.
type Batch struct {
	// X holds the examples, BatchSize × prod(InputShape) values, each example in the
	// layout datasets.Dataset.Example produces (CHW). The real rows' values must be
	// finite; padding rows may hold anything. A float32 model on the native engine reads
	// the rows where they are, without a copy: leave X unchanged during the call and, for
	// PerExampleGradient, until then.
	X []float32
	// Labels holds one class in [0, NumClasses) per row (padding rows: any value).
	Labels []int
	// Mask says which rows are real (true) and which are padding; nil means all are real.
	// Padding rows contribute exactly nothing: no loss, no gradient, no correct count.
	Mask []bool
	// Features says that X already holds the front end's output (FeatureShape per row),
	// as the examples of a dataset that FrontEndFeatures returned (IsFeatures) are.
	Features bool
}

// StepStats describes the real rows of one step.
type StepStats struct {
	Loss     float64 // summed loss (Model.Loss)
	Correct  int     // rows whose largest logit is the label
	Examples int     // real rows
	// Stats holds the per-example gradient norms before clipping (ClippedGradient only;
	// they alias the model's buffers and are overwritten by the next step).
	clipping.Stats
}

// ClippedGradient runs the training graph on b and adds Σ_i c_i·g_i to dst over the real
// rows i, where g_i is example i's gradient of its loss and c_i its clip factor under rule
// (dst has NumParams entries, in Layout order). Adding lets the physical chunks of one
// logical batch accumulate into one buffer. The sum has sensitivity rule.Bound().
//
// Per-example gradients come from one backward pass of the summed loss: the gradient at
// each parametrised layer's pre-activation and that layer's input determine them
// (clipping.Workspace). On error dst is untouched.
func (m *Model) ClippedGradient(b Batch, rule clipping.Rule, dst []float64) (StepStats, error) {
	if err := m.checkGradient(dst); err != nil {
		return StepStats{}, err
	}
	if rule == nil {
		return StepStats{}, fmt.Errorf("nn: %w: nil rule", clipping.ErrRule)
	}
	if err := m.checkLabels(b); err != nil {
		return StepStats{}, err
	}
	b, err := m.frontBatch(b)
	if err != nil {
		return StepStats{}, err
	}
	loss, correct, st, err := m.net.clippedStep(b, rule, dst)
	if err != nil {
		return StepStats{}, err
	}
	return StepStats{Loss: loss, Correct: correct, Examples: m.realRows(b.Mask), Stats: st}, nil
}

// Gradient runs the training graph on b and adds the plain summed gradient Σ_i g_i over
// the real rows to dst: the non-private baseline. It forms no per-example gradient.
func (m *Model) Gradient(b Batch, dst []float64) (StepStats, error) {
	if err := m.checkGradient(dst); err != nil {
		return StepStats{}, err
	}
	if err := m.checkLabels(b); err != nil {
		return StepStats{}, err
	}
	b, err := m.frontBatch(b)
	if err != nil {
		return StepStats{}, err
	}
	loss, correct, err := m.net.sumStep(b, dst)
	if err != nil {
		return StepStats{}, err
	}
	return StepStats{Loss: loss, Correct: correct, Examples: m.realRows(b.Mask)}, nil
}

// PerExampleGradient overwrites dst with example i's gradient from the last
// ClippedGradient or Gradient call, unclipped. It reads that call's Batch.X again (a
// float32 native model keeps no copy of it). It is for diagnostics and tests: never feed
// it to an optimizer of a private run.
func (m *Model) PerExampleGradient(i int, dst []float64) error {
	if !m.net.stepped() {
		return errors.New("nn: PerExampleGradient before any gradient step")
	}
	if err := m.net.perExample(i, dst); err != nil {
		return fmt.Errorf("nn: %w", err)
	}
	return nil
}

// Evaluate runs the forward-only graph on b and returns the summed loss (Model.Loss) and
// the number of correct predictions over the real rows (use the mask for a last, partial
// batch).
func (m *Model) Evaluate(b Batch) (lossSum float64, correct int, err error) {
	if err := m.checkLabels(b); err != nil {
		return 0, 0, err
	}
	b, err = m.frontBatch(b)
	if err != nil {
		return 0, 0, err
	}
	return m.net.evaluate(b)
}

// Predict writes the predicted class of each of the BatchSize examples in x into dst.
func (m *Model) Predict(x []float32, dst []int) error {
	if len(dst) != m.batch {
		return fmt.Errorf("%w: %d prediction slots for batch size %d", ErrBatch, len(dst), m.batch)
	}
	b, err := m.frontBatch(Batch{X: x})
	if err != nil {
		return err
	}
	if _, _, err := m.net.evaluate(b); err != nil {
		return err
	}
	m.net.predictions(dst)
	return nil
}

func (m *Model) checkGradient(dst []float64) error {
	if len(dst) != m.numParams {
		return fmt.Errorf("nn: %w: gradient buffer has %d entries, model has %d", clipping.ErrShape, len(dst), m.numParams)
	}
	return nil
}

func (m *Model) checkLabels(b Batch) error {
	if b.Labels == nil {
		return fmt.Errorf("%w: no labels", ErrBatch)
	}
	return nil
}

func (m *Model) realRows(mask []bool) int {
	if mask == nil {
		return m.batch
	}
	n := 0
	for _, r := range mask {
		if r {
			n++
		}
	}
	return n
}
