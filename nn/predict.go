package nn

import (
	"fmt"
	"math"
	"sync"

	"github.com/privtrain/privtrain/internal/num"
)

func (n *net[T]) logits(dst []float64) { num.Convert(dst, n.eval.logits) }

func (n *nativeNet[T]) logits(dst []float64) { num.Convert(dst, n.eval.Logits()[:len(dst)]) }

// Logits runs the forward-only pass on the BatchSize examples of b.X and writes their
// logits, BatchSize × NumClasses values row by row, into dst. Rows masked out by b.Mask
// get zero input (their logits are those of an all-zero example); b.Labels is ignored.
// Like every Model method it is not safe for concurrent use: see Predictor.
func (m *Model) Logits(b Batch, dst []float64) error {
	if len(dst) != m.batch*m.numClasses {
		return fmt.Errorf("%w: %d logit slots for %d examples × %d classes", ErrBatch, len(dst), m.batch, m.numClasses)
	}
	b.Labels = nil
	b, err := m.frontBatch(b)
	if err != nil {
		return err
	}
	if _, _, err := m.net.evaluate(b); err != nil {
		return err
	}
	m.net.logits(dst)
	return nil
}

// Predictor computes logits and class probabilities of a trained model for any number of
// examples: it cuts the input into the model's physical batches and pads the last one.
// It needs only the model (ModelFromCheckpoint or LoadPredictor): no training data and no
// privacy state.
//
// A Predictor is safe for concurrent use: calls take turns on the one model (each call
// already spreads its batches' rows over all cores), and it owns the model it was made
// from, which the caller must no longer use.
type Predictor struct {
	mu   sync.Mutex
	m    *Model
	x    []float32
	mask []bool
	buf  []float64
}

// NewPredictor returns a Predictor that owns m.
func NewPredictor(m *Model) *Predictor {
	return &Predictor{
		m:    m,
		x:    make([]float32, m.batch*m.rawLen),
		mask: make([]bool, m.batch),
		buf:  make([]float64, m.batch*m.numClasses),
	}
}

// LoadPredictor reads the checkpoint at path and returns a Predictor of its model, which
// computes in the checkpoint's DType unless opts say otherwise, in physical batches of
// 128 examples.
func LoadPredictor(path string, opts ...Option) (*Predictor, error) {
	m, err := LoadModel(path, predictBatch, opts...)
	if err != nil {
		return nil, err
	}
	return NewPredictor(m), nil
}

// predictBatch is LoadPredictor's physical batch size: large enough to keep every core
// busy, small enough to be cheap for a handful of images.
const predictBatch = 128

// Model returns the model; use it only while no other goroutine uses the Predictor.
func (p *Predictor) Model() *Model { return p.m }

// InputShape is the per-example input shape (CHW) the model expects.
func (p *Predictor) InputShape() []int { return p.m.InputShape() }

// ExampleLen is the number of values of one example: the product of InputShape.
func (p *Predictor) ExampleLen() int { return p.m.rawLen }

// NumClasses is the number of logits per example.
func (p *Predictor) NumClasses() int { return p.m.numClasses }

// Logits computes the logits of the examples in x, ExampleLen values each (CHW, scaled
// as the training data were), into dst, NumClasses values per example. len(x) must be a
// multiple of ExampleLen (0 is allowed) and len(dst) must be NumClasses per example.
func (p *Predictor) Logits(x []float32, dst []float64) error {
	L, K, B := p.m.rawLen, p.m.numClasses, p.m.batch
	if len(x)%L != 0 {
		return fmt.Errorf("%w: %d input values are not a whole number of examples of %d values (shape %v)", ErrBatch, len(x), L, p.m.rawShape)
	}
	n := len(x) / L
	if len(dst) != n*K {
		return fmt.Errorf("%w: %d output slots for %d examples × %d classes", ErrBatch, len(dst), n, K)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for lo := 0; lo < n; lo += B {
		rows := min(B, n-lo)
		copy(p.x, x[lo*L:(lo+rows)*L])
		for i := range p.mask {
			p.mask[i] = i < rows
		}
		if err := p.m.Logits(Batch{X: p.x, Mask: p.mask}, p.buf); err != nil {
			return shiftRows(err, lo)
		}
		copy(dst[lo*K:(lo+rows)*K], p.buf[:rows*K])
	}
	return nil
}

// shiftRows makes an error about row i of a batch name the caller's example lo+i.
func shiftRows(err error, lo int) error {
	if lo == 0 {
		return err
	}
	return fmt.Errorf("%w (in the batch starting at example %d)", err, lo)
}

// Probabilities computes the softmax of the logits of the examples in x into dst, with
// the same lengths as Logits: NumClasses probabilities per example, summing to 1.
func (p *Predictor) Probabilities(x []float32, dst []float64) error {
	if err := p.Logits(x, dst); err != nil {
		return err
	}
	K := p.m.numClasses
	for i := 0; i < len(dst); i += K {
		Softmax(dst[i:i+K], dst[i:i+K])
	}
	return nil
}

// Softmax writes exp(z_j)/Σ_k exp(z_k) into dst (which may be z), computed stably
// (shifted by the largest logit).
func Softmax(dst, z []float64) {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = max(mx, v)
	}
	var sum float64
	for j, v := range z {
		dst[j] = math.Exp(v - mx)
		sum += dst[j]
	}
	for j := range dst[:len(z)] {
		dst[j] /= sum
	}
}

// Argmax is the index of the largest value (the first of equal ones): the predicted
// class of a row of logits or probabilities.
func Argmax(v []float64) int { return argmax(v) }
