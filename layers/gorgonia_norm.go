package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The pieces that GroupNorm's and WSConv2D's reference graphs share: constant matrices,
// and the division of centred rows by their standard deviation, built of matrix products
// and elementwise ops of equal shapes only (see GroupNorm.Apply for why).

// constMatrix is an r×q constant of x's graph and dtype with entries v(i, j); name and the
// graph's node count keep its node name unique.
func constMatrix(x *G.Node, name string, r, q int, v func(i, j int) float64) *G.Node {
	var t tensor.Tensor
	if x.Dtype() == tensor.Float32 {
		d := make([]float32, r*q)
		for j := range d {
			d[j] = float32(v(j/q, j%q))
		}
		t = tensor.New(tensor.WithShape(r, q), tensor.WithBacking(d))
	} else {
		d := make([]float64, r*q)
		for j := range d {
			d[j] = v(j/q, j%q)
		}
		t = tensor.New(tensor.WithShape(r, q), tensor.WithBacking(d))
	}
	g := x.Graph()
	return G.NewMatrix(g, x.Dtype(), G.WithShape(r, q), G.WithValue(t), G.WithName(fmt.Sprintf("%s_%d_%d_%d", name, r, q, g.AllNodes().Len())))
}

// constant is v(i, j) = c.
func constant(c float64) func(int, int) float64 { return func(int, int) float64 { return c } }

// divideBySD is c / sqrt(c²·weights + eps), the [R, N] rows of c divided by the root of
// their weighted sum of squares: weights is [N, 1] (1/N for a variance), eps [R, 1], and
// rowOnes [1, N] spreads each row's root back over the row.
func divideBySD(c, weights, eps, rowOnes *G.Node) (*G.Node, error) {
	sq, err := G.Square(c)
	if err != nil {
		return nil, err
	}
	v, err := G.Mul(sq, weights)
	if err != nil {
		return nil, err
	}
	if v, err = G.Add(v, eps); err != nil {
		return nil, err
	}
	sd, err := G.Sqrt(v)
	if err != nil {
		return nil, err
	}
	if sd, err = G.Mul(sd, rowOnes); err != nil {
		return nil, err
	}
	return G.HadamardDiv(c, sd)
}
