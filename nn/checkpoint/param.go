package checkpoint

import "slices"

// ParamInfo names one parameter tensor and its shape, in the flat parameter order.
type ParamInfo struct {
	Name  string `json:"name"` // "<layer><n>.<param>", e.g. "conv1.weight", "dense2.bias"
	Shape []int  `json:"shape"`
}

// Size is the number of values of the tensor.
func (p ParamInfo) Size() int {
	n := 1
	for _, s := range p.Shape {
		n *= s
	}
	return n
}

// LayoutsEqual reports whether two parameter layouts have the same names and shapes in
// the same order.
func LayoutsEqual(a, b []ParamInfo) bool {
	return slices.EqualFunc(a, b, func(x, y ParamInfo) bool { return x.Name == y.Name && slices.Equal(x.Shape, y.Shape) })
}
