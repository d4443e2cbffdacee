package layers

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/scatter"
)

func TestScattering2DShape(t *testing.T) {
	l := Scattering2D{J: 2, L: 8}
	if l.Kind() != "scattering2d" || l.Params([]int{1, 28, 28}) != nil {
		t.Errorf("Kind %q, Params %v", l.Kind(), l.Params([]int{1, 28, 28}))
	}
	for _, c := range []struct{ in, want []int }{
		{[]int{1, 28, 28}, []int{81, 7, 7}},  // Fashion-MNIST: 1 + 2·8 + 8²·1
		{[]int{3, 32, 32}, []int{243, 8, 8}}, // CIFAR-10
	} {
		got, err := l.OutputShape(c.in)
		if err != nil || len(got) != 3 || got[0] != c.want[0] || got[1] != c.want[1] || got[2] != c.want[2] {
			t.Errorf("OutputShape(%v) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct {
		l    Scattering2D
		in   []int
		want string
	}{
		{Scattering2D{2, 8}, []int{28, 28}, "want [C H W]"},
		{Scattering2D{2, 8}, []int{1, 3, 28}, "smaller than 2^J = 4"},
		{Scattering2D{0, 8}, []int{1, 28, 28}, "J = 0"},
		{Scattering2D{2, 0}, []int{1, 28, 28}, "L = 0"},
		{Scattering2D{2, 8}, []int{0, 28, 28}, "0 channels"},
	} {
		if _, err := c.l.OutputShape(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v.OutputShape(%v) = %v, want an error containing %q", c.l, c.in, err, c.want)
		}
	}
}

// TestScattering2DGraph holds the Gorgonia graph (direct convolutions in the spatial
// domain) and package scatter's FFT implementation to each other, in float64 to 1e-10 and
// in a float32 graph to float32 rounding.
func TestScattering2DGraph(t *testing.T) {
	cases := []struct {
		J, L, B, C, H, W int
		dt               tensor.Dtype
	}{
		{2, 4, 2, 2, 12, 10, tensor.Float64},
		{3, 2, 1, 1, 16, 17, tensor.Float64}, // two j2 for j1 = 0: Kymatio's (j1, ℓ1, j2, ℓ2) order
		{2, 4, 1, 3, 9, 8, tensor.Float32},
		{2, 8, 1, 1, 28, 28, tensor.Float64}, // Fashion-MNIST's setting
	}
	if testing.Short() {
		cases = cases[:3]
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range cases {
		shape := []int{c.B, c.C, c.H, c.W}
		x := make([]float64, num.Prod(shape))
		for i := range x {
			x[i] = rng.Float64()
		}
		g := G.NewGraph()
		var backing any = append([]float64(nil), x...)
		if c.dt == tensor.Float32 {
			f := make([]float32, len(x))
			for i, v := range x {
				f[i] = float32(v)
				x[i] = float64(f[i])
			}
			backing = f
		}
		xn := G.NewTensor(g, c.dt, 4, G.WithShape(shape...), G.WithName("x"),
			G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))))
		l := Scattering2D{J: c.J, L: c.L}
		y, tap, err := l.Apply(xn, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tap != nil {
			t.Errorf("%+v: a tap for a layer without parameters", c)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		vm.Close()
		want, err := l.OutputShape(shape[1:])
		if err != nil {
			t.Fatal(err)
		}
		if ys := y.Shape(); len(ys) != 4 || ys[0] != c.B || ys[1] != want[0] || ys[2] != want[1] || ys[3] != want[2] {
			t.Fatalf("%+v: output node shape %v, OutputShape %v", c, ys, want)
		}
		var got []float64
		tol := 1e-10
		switch v := y.Value().Data().(type) {
		case []float64:
			got = v
		case []float32:
			tol = 1e-5
			for _, f := range v {
				got = append(got, float64(f))
			}
		}
		s, err := scatter.New(c.J, c.L, c.H, c.W)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := s.Transform64(x, c.C)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ref) {
			t.Fatalf("%+v: %d outputs, transform %d", c, len(got), len(ref))
		}
		var worst float64
		for i := range ref {
			worst = math.Max(worst, math.Abs(got[i]-ref[i]))
		}
		t.Logf("%+v: max |graph − FFT| = %.3g", c, worst)
		if worst > tol {
			area := want[1] * want[2]
			for k := 0; k < len(ref)/area && k < 12; k++ {
				t.Logf("path %d: got %.4g %.4g want %.4g %.4g", k, got[k*area], got[k*area+1], ref[k*area], ref[k*area+1])
			}
		}
		if worst > tol {
			t.Errorf("%+v: max |graph − FFT| = %.3g, want ≤ %g", c, worst, tol)
		}
	}
}
