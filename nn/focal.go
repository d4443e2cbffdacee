package nn

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/internal/num"
)

// Loss is the per-example training loss of a Model on the softmax of its logits z: the
// softmax cross-entropy −log p_y (the zero Loss, the default) or, with FocalGamma γ > 0,
// the softmax focal loss −(1 − p_y)^γ · log p_y (Lin et al. 2017, "Focal Loss for Dense
// Object Detection", eq. (4) with α = 1), which down-weights confidently classified
// examples. Either is a per-example loss: each example's gradient is clipped the same
// way, so the choice costs no privacy. Steps, Evaluate and the loss they report use it.
type Loss struct {
	// FocalGamma is the focusing parameter γ: finite and ≥ 0; 0 is the cross-entropy,
	// bit for bit.
	FocalGamma float64
}

// CrossEntropy is the softmax cross-entropy, the default Loss.
var CrossEntropy = Loss{}

// Focal is the softmax focal loss with focusing parameter gamma (Focal(0) is CrossEntropy).
func Focal(gamma float64) Loss { return Loss{FocalGamma: gamma} }

// WithLoss sets the training loss (default CrossEntropy). New refuses a γ that is
// negative or not finite (ErrSpec).
func WithLoss(l Loss) Option { return func(c *config) { c.loss = l } }

// Loss is the model's training loss (WithLoss).
func (m *Model) Loss() Loss { return m.loss }

const focalPrefix = "focal:"

// String is the loss as ParseLoss reads it: "cross-entropy" or "focal:GAMMA" ("focal:2").
func (l Loss) String() string {
	if l.FocalGamma == 0 {
		return "cross-entropy"
	}
	return focalPrefix + strconv.FormatFloat(l.FocalGamma, 'g', -1, 64)
}

// Describe names the loss in a sentence ("cross-entropy", "focal loss (γ = 2)").
func (l Loss) Describe() string {
	if l.FocalGamma == 0 {
		return "cross-entropy"
	}
	return "focal loss (γ = " + strconv.FormatFloat(l.FocalGamma, 'g', -1, 64) + ")"
}

// Check reports a γ that is negative or not finite (ErrSpec).
func (l Loss) Check() error {
	if g := l.FocalGamma; math.IsNaN(g) || math.IsInf(g, 0) || g < 0 {
		return fmt.Errorf("%w: focal loss γ = %v: want a finite γ ≥ 0 (0: cross-entropy)", ErrSpec, g)
	}
	return nil
}

// ParseLoss reads a loss as String writes it: "cross-entropy" or "focal:GAMMA" with a
// finite GAMMA ≥ 0 ("focal:0" is the cross-entropy). Anything else is ErrSpec.
func ParseLoss(s string) (Loss, error) {
	if s == "cross-entropy" {
		return CrossEntropy, nil
	}
	v, ok := strings.CutPrefix(s, focalPrefix)
	if !ok {
		return Loss{}, fmt.Errorf("%w: loss %q: want cross-entropy or focal:GAMMA (e.g. focal:2)", ErrSpec, s)
	}
	g, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return Loss{}, fmt.Errorf("%w: loss %q: GAMMA %q is not a number (e.g. focal:2)", ErrSpec, s, v)
	}
	l := Focal(g)
	if err := l.Check(); err != nil {
		return Loss{}, err
	}
	return l, nil
}

// labelFocal is the focal loss (1 − p)^γ·ℓ of one row of logits z with label y, where
// ℓ = −log p is its cross-entropy and p = softmax(z)_y; with dz != nil it writes the
// gradient w·(softmax(z) − e_y), w = (1−p)^γ − γ(1−p)^(γ−1)·p·log p
// = (1−p)^γ·(1 + γ·p·ℓ/(1−p)). In float64 and to full relative precision as p → 1, where
// the loss and gradient are tiny: with m the largest logit (first at index a) and
// r = Σ_{k≠a} e^(z_k−m), ℓ = (m − z_y) + log1p(r), and for y = a, 1 − p = r/(1 + r) (for
// y ≠ a, p ≤ ½). ℓ/(1−p) → 1 as r → 0, so w stays finite (→ 0 for γ > 0) where
// (1−p)^(γ−1) is not. γ = 0 is labelCrossEntropy's arithmetic; callers use that for it.
func labelFocal[T num.Float](z []T, y int, gamma float64, dz []T) float64 {
	a := argmax(z)
	m := float64(z[a])
	var r float64
	for k, v := range z {
		if k != a {
			r += math.Exp(float64(v) - m)
		}
	}
	s := 1 + r
	l := (m - float64(z[y])) + math.Log1p(r)
	p, q := 1/s, r/s
	if y != a {
		p = math.Exp(float64(z[y])-m) / s
		q = 1 - p
	}
	qg := math.Pow(q, gamma)
	if dz != nil {
		w := qg
		if p > 0 { // p = 0: the second term is 0 (and ℓ may be huge)
			lq := 1.0 // ℓ/(1 − p) as 1 − p → 0
			if q > 0 {
				lq = l / q
			}
			w = qg * (1 + gamma*p*lq)
		}
		for j, v := range z {
			dz[j] = T(w * math.Exp(float64(v)-m) / s)
		}
		dz[y] = T(-w * q) // softmax_y − 1 = −(1 − p), without the cancellation
	}
	return qg * l
}

// oneHotLabel is the class of a target row of the Gorgonia loss op: the index of its one
// entry 1, or −1 for a zero (padding) row; any other row is an error (the focal loss is
// defined for one-hot targets only).
func oneHotLabel[T num.Float](t []T) (int, error) {
	y := -1
	for j, v := range t {
		switch {
		case v == 0:
		case v == 1 && y < 0:
			y = j
		default:
			return 0, fmt.Errorf("focal loss: target row %v is neither one-hot nor zero", t)
		}
	}
	return y, nil
}

// focalLoss is Σ_i labelFocal over the rows of z [B, K] with one-hot or zero targets t.
func focalLoss[T num.Float](z, t []T, k int, gamma float64) (float64, error) {
	var loss float64
	for r := 0; r+k <= len(z); r += k {
		y, err := oneHotLabel(t[r : r+k])
		if err != nil {
			return 0, err
		}
		if y >= 0 {
			loss += labelFocal(z[r:r+k], y, gamma, nil)
		}
	}
	return loss, nil
}

// focalGrad writes g·∂focalLoss/∂z into dz (padding rows: exactly zero).
func focalGrad[T num.Float](dz, z, t []T, k int, gamma, g float64) error {
	for r := 0; r+k <= len(z); r += k {
		dr := dz[r : r+k]
		y, err := oneHotLabel(t[r : r+k])
		if err != nil {
			return err
		}
		if y < 0 {
			clear(dr)
			continue
		}
		labelFocal(z[r:r+k], y, gamma, dr)
		if g != 1 {
			for j := range dr {
				dr[j] = T(g * float64(dr[j]))
			}
		}
	}
	return nil
}

// Value is the loss of one row of logits z with label y: the term Evaluate sums for that
// row, for callers that compute the logits themselves (through a Predictor). A label
// outside [0, len(z)) gives NaN.
func (l Loss) Value(z []float64, y int) float64 {
	if y < 0 || y >= len(z) {
		return math.NaN()
	}
	if l.FocalGamma == 0 {
		return labelCrossEntropy(z, y, nil)
	}
	return labelFocal(z, y, l.FocalGamma, nil)
}
