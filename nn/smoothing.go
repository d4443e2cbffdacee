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
// tensor (conv weights [out, in, kh, kw], as in PyTorch; biases; group-norm scales; the
// parameters of layers from other packages) in storage order, smoothing.Flat().
//
//	lap, err := smoothing.NewLaplacian[float64](sigma, layout, smoothing.Axes(m.SmoothingAxes()...))
func (m *Model) SmoothingAxes() []smoothing.Axis {
	axes := make([]smoothing.Axis, 0, len(m.layout))
	shape := m.inputShape
	for _, l := range m.layers {
		for _, p := range l.Params(shape) {
			a := smoothing.Flat()
			if _, dense := l.(layers.Dense); dense && p.Name == "weight" && len(p.Shape) == 2 {
				a = smoothing.Along(0)
			}
			axes = append(axes, a)
		}
		out, err := l.OutputShape(shape)
		if err != nil {
			break // New checked the shapes; not reached
		}
		shape = out
	}
	return axes
}
