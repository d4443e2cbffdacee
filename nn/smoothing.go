package nn

import (
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/smoothing"
)

// SmoothingAxes returns, one per tensor of Layout, the axis along which DP-LSSGD's
// Laplacian smoothing takes neighbours by default (smoothing.Axes): the order in which
// PyTorch stores the same tensor, which is what the DP-LSSGD authors' code smooths (each
// parameter tensor flattened as param.view(-1)). A Dense weight, stored [in, out] here
// and [out, in] in PyTorch, is read along its inputs, smoothing.Along(0); every other
// tensor (conv weights [out, in, kh, kw], as in PyTorch; biases; group-norm scales) in
// storage order, smoothing.Flat(). A layer says otherwise by implementing
// layers.Smoothed in its own file, as Dense does.
//
//	lap, err := smoothing.NewLaplacian[float64](sigma, layout, smoothing.Axes(m.SmoothingAxes()...))
func (m *Model) SmoothingAxes() []smoothing.Axis {
	axes := make([]smoothing.Axis, len(m.layout))
	plan, _, err := planLayers(m.Spec())
	if err != nil {
		return axes // not reached: the model was built from this spec
	}
	k := 0 // the layout lists the parametrised layers' tensors in plan order
	for _, pl := range plan {
		if s, ok := pl.layer.(layers.Smoothed); ok {
			if la := s.SmoothingAxes(pl.in); len(la) == len(pl.params) {
				copy(axes[k:], la)
			}
		}
		k += len(pl.params)
	}
	return axes
}
