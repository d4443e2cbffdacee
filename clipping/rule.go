package clipping

import (
	"fmt"
	"math"
	"slices"

	"github.com/privtrain/privtrain/internal/faults"
)

// Rule is a per-example clipping rule. Only this package implements it, so that every
// rule's Bound is proved here: the L2 norm of one example's clipped contribution never
// exceeds Bound, in exact arithmetic on the values the workspace computes: every clip
// coefficient below 1, and every one whose example's norm comes within the margin of the
// threshold, is shrunk by a few ulps and rounded down, so that rounding never takes a
// contribution above its threshold (an example whose computed norm is just ≤ C may have a
// true norm just above it).
//
// A consumer that adds noise (dpoptim) needs only Bound: the sensitivity of the clipped sum
// to adding or removing one example.
type Rule interface {
	// Bound is the largest L2 norm one example's clipped gradient can have.
	Bound() float64
	// check reports whether the rule fits a network with the given number of
	// parametrised layers.
	check(layers int) error
	// factors writes the ratio C/‖g‖ of each layer into f, given the example's squared
	// gradient norm restricted to each layer (len(sq) == len(f)); it is not capped at 1
	// (+Inf for a zero gradient): clipCoef applies the margin, then the cap.
	factors(sq, f []float64)
}

// Flat clips each example's whole gradient (all parameters together) to L2 norm C:
// g ← g·min(1, C/‖g‖), the rule of Abadi et al. and TF Privacy (seeds digest §0.4).
type Flat struct{ C float64 }

// Bound is C.
func (r Flat) Bound() float64 { return r.C }

func (r Flat) check(int) error { return checkThreshold("flat", r.C) }

// String describes the rule as plans and checkpoints store it: "flat C=1".
func (r Flat) String() string { return fmt.Sprintf("flat C=%v", r.C) }

func (r Flat) factors(sq, f []float64) {
	var s float64
	for _, v := range sq {
		s += v
	}
	c := clipFactor(math.Sqrt(s), r.C)
	for l := range f {
		f[l] = c
	}
}

// PerLayer clips the part of each example's gradient that belongs to parametrised layer l
// (its weight and bias together) to L2 norm C[l] on its own. The whole clipped gradient then
// has norm at most sqrt(Σ_l C[l]²), which is the Bound.
type PerLayer struct{ C []float64 }

// PerLayerEqual splits a total bound evenly over the given number of layers: every layer
// gets total/sqrt(layers), so that Bound() == total.
func PerLayerEqual(total float64, layers int) PerLayer {
	c := make([]float64, max(layers, 0))
	for l := range c {
		c[l] = total / math.Sqrt(float64(layers))
	}
	return PerLayer{C: c}
}

// Bound is sqrt(Σ_l C[l]²).
func (r PerLayer) Bound() float64 {
	var s float64
	for _, c := range r.C {
		s += c * c
	}
	return math.Sqrt(s)
}

// String describes the rule as plans and checkpoints store it: "per-layer C=[0.5 0.5]".
func (r PerLayer) String() string { return fmt.Sprintf("per-layer C=%v", r.C) }

func (r PerLayer) check(layers int) error {
	if len(r.C) != layers {
		return fmt.Errorf("%w: per-layer rule has %d thresholds for %d parametrised layers", ErrRule, len(r.C), layers)
	}
	for l, c := range r.C {
		if err := checkThreshold(fmt.Sprintf("layer %d", l), c); err != nil {
			return err
		}
	}
	return nil
}

func (r PerLayer) factors(sq, f []float64) {
	for l := range f {
		f[l] = clipFactor(math.Sqrt(sq[l]), r.C[l])
	}
}

// Copy returns a copy of r that shares nothing with it (a PerLayer's thresholds are
// copied; a rule passed by pointer is copied by value), so that a caller changing its
// rule later cannot change the clipping of a run whose noise was scaled to the rule's
// Bound. A nil pointer stays as it is.
func Copy(r Rule) Rule {
	switch r := r.(type) {
	case PerLayer:
		return PerLayer{C: slices.Clone(r.C)}
	case *PerLayer:
		if r != nil {
			return PerLayer{C: slices.Clone(r.C)}
		}
	case *Flat:
		if r != nil {
			return *r
		}
	}
	return r
}

// Fits reports whether r fits a network with the given number of parametrised layers
// (a PerLayer needs one threshold for each) with finite positive thresholds.
func Fits(r Rule, layers int) error { return r.check(layers) }

func checkThreshold(what string, c float64) error {
	if !(c > 0) || math.IsInf(c, 0) {
		return fmt.Errorf("%w: %s threshold %v is not a positive finite number", ErrRule, what, c)
	}
	return nil
}

// clipFactor is c/norm, the clip factor before its cap at 1; clipCoef caps it after
// shrinking it by the rounding margin, so that small gradients still pass bit for bit.
func clipFactor(norm, c float64) float64 {
	if faults.Active(faults.NoClip) { // the fault: audit tests only
		return math.Inf(1)
	}
	return c / norm
}
