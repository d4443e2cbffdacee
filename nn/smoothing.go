package nn

import (
	"strings"

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
	dense := layers.Dense{}.Kind()
	axes := make([]smoothing.Axis, len(m.layout))
	for i, p := range m.layout {
		// p.Name is "<kind><n>.<param>" (ParamInfo).
		layer, param, _ := strings.Cut(p.Name, ".")
		kind := strings.TrimRight(layer, "0123456789")
		if kind == dense && param == "weight" && len(p.Shape) == 2 {
			axes[i] = smoothing.Along(0)
		}
	}
	return axes
}
