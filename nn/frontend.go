package nn

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/layers"
)

// A spec whose first layers are layers.FrontEnd layers (fixed, parameter-free,
// data-independent: layers.Scattering2D) runs them as a front end outside the trainable
// network. New compiles only the layers after them, on the front end's output shape
// (FeatureShape), so a Scattering2D, which has no native kernel, does not put the model
// on the Gorgonia engine. The model's InputShape stays the raw input's: Predict,
// Evaluate, Logits, Gradient and ClippedGradient on raw batches apply the front end to
// the batch first, and the Trainer computes the features of its training and test sets
// once, before its first step, and trains on those (FrontEndFeatures).
//
// The front end changes nothing about privacy: per-example gradients, their clipping and
// the noise concern the trainable parameters only, exactly as if the features were the
// data. The front end has no parameters and does not look at the data, so what it
// computes from an example depends on that example alone, and the mechanism's
// sensitivity is the clipping bound as before.

//
// On the native engine in float32, the parameter-free per-example layers that directly
// follow the FrontEnd layers (layers.Skippable: GroupNorm with NoAffine, Flatten, ReLU,
// Tanh, MaxPool2D, AvgPool2D; the scatter models' GroupNorm and Flatten) are fixed
// functions of fixed features too, and join the front end: their output is computed once
// with the scattering, by the native engine's own ops (layers.NewNativeFront) and in its
// internal layout (images channels-innermost, a Flatten before a Dense in the order the
// Dense reads it), and the native programs start after them (layers.NewNativeAfter). The
// features, and so training, are bit for bit those of computing the layers in every step.
// A model on the Gorgonia engine, or in float64 (whose features would be rounded to the
// float32 of the feature datasets), keeps them in the network; so does a model without a
// FrontEnd layer: its first GroupNorm or Flatten alone does not make a front end.

// frontEnd is a model's leading FrontEnd layers, compiled for its input shape, and the
// layers absorbed after them.
type frontEnd struct {
	stages []frontStage
	in     []int // the raw per-example shape
	out    []int // the features' per-example shape
	raw    []float32
	// absorbed are the Skippable layers after the stages computed by native, nil if none.
	absorbed []layers.Layer
	native   func([]float32) ([]float32, error)
}

type frontStage struct {
	layer     layers.Layer
	transform func([]float32) ([]float32, error)
}

// newFrontEnd compiles the leading front-end layers of plan (nil if there are none).
func newFrontEnd(plan []plannedLayer) (*frontEnd, error) {
	var f *frontEnd
	for _, pl := range plan {
		if !pl.front {
			break
		}
		fe := pl.layer.(layers.FrontEnd)
		tr, err := fe.NewTransform(pl.in)
		if err != nil {
			return nil, fmt.Errorf("%w: front end %s: %v", ErrSpec, pl.layer.Kind(), err)
		}
		if f == nil {
			f = &frontEnd{in: slices.Clone(pl.in)}
		}
		f.stages = append(f.stages, frontStage{layer: pl.layer, transform: tr})
		f.out = slices.Clone(pl.out)
	}
	return f, nil
}

// absorbable is the number of leading layers of plan (the network after the FrontEnd
// stages) that the front end can take over on the native engine in dtype: 0 without a
// front end, in float64, or when none is Skippable.
func (f *frontEnd) absorbable(plan []plannedLayer, dtype DType) int {
	if f == nil || dtype != Float32 {
		return 0
	}
	k := 0
	for k < len(plan)-1 && len(plan[k].params) == 0 && layers.Skippable(plan[k].layer) {
		k++
	}
	return k
}

// absorb makes the first skip layers of plan (compiled by newNativeNet with that skip) part
// of the front end, and the model's feature shape their output.
func (f *frontEnd) absorb(m *Model, plan []plannedLayer, skip int) error {
	ls := make([]layers.Layer, len(plan))
	for i, pl := range plan {
		ls[i] = pl.layer
	}
	tr, n, err := layers.NewNativeFront(ls, m.inputShape, skip)
	if err != nil {
		return fmt.Errorf("%w: front end: %v", ErrSpec, err)
	}
	out := plan[skip-1].out
	if num.Prod(out) != n {
		return fmt.Errorf("%w: front end gives %d values per example, layer %s %v", ErrSpec, n, plan[skip-1].layer.Kind(), out)
	}
	f.absorbed, f.native = ls[:skip], tr
	f.out = slices.Clone(out)
	m.inputShape, m.exampleLen = slices.Clone(out), n
	return nil
}

// layers lists the front end's layers: the FrontEnd stages, then those absorbed.
func (f *frontEnd) layers() []layers.Layer {
	var ls []layers.Layer
	for _, st := range f.stages {
		ls = append(ls, st.layer)
	}
	return append(ls, f.absorbed...)
}

// len is the number of FrontEnd stages (0 for nil), not counting absorbed layers.
func (f *frontEnd) len() int {
	if f == nil {
		return 0
	}
	return len(f.stages)
}

// apply runs the stages on n examples laid end to end in x.
func (f *frontEnd) apply(x []float32) ([]float32, error) {
	n := len(x) / num.Prod(f.in)
	for _, st := range f.stages {
		var err error
		if x, err = st.transform(x); err != nil {
			return nil, err
		}
	}
	if f.native != nil {
		var err error
		if x, err = f.native(x); err != nil {
			return nil, err
		}
	}
	if len(x) != n*num.Prod(f.out) {
		return nil, fmt.Errorf("nn: front end returned %d values for %d examples of %v", len(x), n, f.out)
	}
	return x, nil
}

// String names the front-end layers: "scattering2d", or "scattering2d → …".
func (f *frontEnd) String() string {
	var names []string
	for _, l := range f.layers() {
		names = append(names, l.Kind())
	}
	return strings.Join(names, " → ")
}

// HasFrontEnd says whether the model's spec starts with FrontEnd layers that run outside
// the trainable network (see FeatureShape).
func (m *Model) HasFrontEnd() bool { return m.front != nil }

// FrontEnd names the model's front-end layers by kind ("scattering2d", or
// "scattering2d → groupnorm → flatten" with absorbed layers); empty without one.
func (m *Model) FrontEnd() string {
	if m.front == nil {
		return ""
	}
	return m.front.String()
}

// FeatureShape is the per-example input shape of the trainable network: the output of the
// front end (e.g. [81 7 7] for a Scattering2D{J: 2, L: 8} of 1×28×28 images, [3969] when
// a GroupNorm and a Flatten follow it on the native engine in float32), or InputShape for
// a model without a front end. Absorbed layers' features are in the native engine's
// internal layout (see the top of frontend.go), not necessarily CHW.
func (m *Model) FeatureShape() []int { return slices.Clone(m.inputShape) }

// frontBatch returns b with its raw rows replaced by their features; b itself for a model
// without a front end or a batch of features. Masked rows are transformed as zeros.
func (m *Model) frontBatch(b Batch) (Batch, error) {
	if m.front == nil || b.Features {
		return b, nil
	}
	B, L := m.batch, m.rawLen
	if err := checkBatch(b, B, L); err != nil {
		return b, err
	}
	f := m.front
	if len(f.raw) != B*L {
		f.raw = make([]float32, B*L)
	}
	for i := range B {
		row := f.raw[i*L : (i+1)*L]
		if b.Mask != nil && !b.Mask[i] {
			clear(row)
			continue
		}
		copy(row, b.X[i*L:(i+1)*L])
		for j, v := range row {
			if v != v || math.IsInf(float64(v), 0) {
				return b, fmt.Errorf("%w: example %d value %d is %v", ErrBatch, i, j, v)
			}
		}
	}
	x, err := f.apply(f.raw)
	if err != nil {
		return b, fmt.Errorf("nn: front end %s: %w", f, err)
	}
	b.X, b.Features = x, true
	return b, nil
}

// FrontEndFeatures computes the front end's output for every example of ds (whose shape
// must be the model's InputShape) once, on every core, and returns them as a dataset of
// FeatureShape examples with ds's labels. For a model without a front end it returns ds.
// The Trainer calls it for its training and test sets before the first step.
func (m *Model) FrontEndFeatures(ds datasets.Dataset) (datasets.Dataset, error) {
	return m.FrontEndFeaturesContext(context.Background(), ds)
}

// FrontEndFeaturesContext is FrontEndFeatures, stopping between chunks when ctx is done
// (with an error wrapping ctx.Err()).
func (m *Model) FrontEndFeaturesContext(ctx context.Context, ds datasets.Dataset) (datasets.Dataset, error) {
	if m.front == nil {
		return ds, nil
	}
	if !slices.Equal(ds.Shape(), m.rawShape) {
		return nil, fmt.Errorf("%w: examples of shape %v, model %s expects %v", ErrBatch, ds.Shape(), m.name, m.rawShape)
	}
	fs, err := datasets.Transform(ctx, ds, m.front.out, m.front.apply)
	if err != nil {
		return nil, fmt.Errorf("nn: front end %s: %w", m.front, err)
	}
	return &featureSet{fs}, nil
}

// IsFeatures reports whether ds holds precomputed front-end features (FrontEndFeatures'
// result) rather than raw inputs: a trainer loads its examples into Batch.X with
// Batch.Features set.
func IsFeatures(ds datasets.Dataset) bool {
	_, ok := ds.(*featureSet)
	return ok
}

// featureSet marks a dataset of this model's precomputed front-end features, so that the
// trainer loads its examples as features, not raw inputs.
type featureSet struct{ *datasets.Features }

// FrontEndLayers returns the model's front-end layers in order (nil without a front end),
// the absorbed ones included: what a feature cache keys on (package training).
func (m *Model) FrontEndLayers() []layers.Layer {
	if m.front == nil {
		return nil
	}
	return m.front.layers()
}

// FrontEndLayout is "native" when the front end includes absorbed layers, whose features
// are in the native engine's internal layout, and "" otherwise.
func (m *Model) FrontEndLayout() string {
	if m.front == nil || len(m.front.absorbed) == 0 {
		return ""
	}
	return "native"
}

// ApplyFrontEnd computes the features of one raw example x (InputShape) with the model's
// front end; the result (FeatureShape) is the model's buffer, valid until the next call.
// A Model is not safe for concurrent use.
func (m *Model) ApplyFrontEnd(x []float32) ([]float32, error) {
	if m.front == nil {
		return nil, fmt.Errorf("%w: model %s has no front end", ErrSpec, m.name)
	}
	return m.front.apply(x)
}

// AsFeatures marks f, features computed by this package's front end (or read back from a
// cache of them), as a dataset whose examples are front-end features (IsFeatures).
func AsFeatures(f *datasets.Features) datasets.Dataset { return &featureSet{f} }

// FeaturesOf returns the features of a dataset that FrontEndFeatures or AsFeatures
// returned, and false for any other dataset.
func FeaturesOf(ds datasets.Dataset) (*datasets.Features, bool) {
	fs, ok := ds.(*featureSet)
	if !ok {
		return nil, false
	}
	return fs.Features, true
}
