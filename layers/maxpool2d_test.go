package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// directMaxPool is the max over each window, padded cells excluded. padN/padS/padW/padE
// are the padding above, below, left and right.
func directMaxPool(x []float64, B, C, H, W, kh, kw, sh, sw, padN, padS, padW, padE int) []float64 {
	OH := (H+padN+padS-kh)/sh + 1
	OW := (W+padW+padE-kw)/sw + 1
	out := make([]float64, 0, B*C*OH*OW)
	for b := range B {
		for c := range C {
			for oh := range OH {
				for ow := range OW {
					m := math.Inf(-1)
					for i := range kh {
						for j := range kw {
							if v, ok := padded(x, C, H, W, b, c, oh*sh-padN+i, ow*sw-padW+j); ok {
								m = math.Max(m, v)
							}
						}
					}
					out = append(out, m)
				}
			}
		}
	}
	return out
}

func TestMaxPool2DMatchesDirectMax(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    MaxPool2D
		in   []int
	}{
		{"mnist 2x2 stride 1", MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}}, []int{2, 6, 6}},
		{"default stride", MaxPool2D{Kernel: [2]int{2, 2}}, []int{1, 6, 7}},
		{"cifar 3x3/2 pad 1", MaxPool2D{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}, []int{2, 8, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const B = 2
			// Normal inputs are half negative, so padding that wrongly acted as 0 would show.
			r := runLayer(t, tc.l, B, tc.in, rand.New(rand.NewPCG(1, 2)))
			s := tc.l.stride()
			p := tc.l.Padding
			want := directMaxPool(r.x, B, tc.in[0], tc.in[1], tc.in[2], tc.l.Kernel[0], tc.l.Kernel[1], s[0], s[1], p[0], p[0], p[1], p[1])
			assertNear(t, "maxpool", r.out, want, 0)
		})
	}
}

// TestTrapAsymmetricPoolPadding shows the Gorgonia trap: MaxPool2D with 4-element padding
// (north, south, west, east) = (0, 1, 0, 1) computes the wrong windows, and that our layer,
// which only has symmetric padding, cannot express it.
func TestTrapAsymmetricPoolPadding(t *testing.T) {
	// One 3×3 channel, values 1..9. A 2×2 pool with stride 2 and one padding row/column at
	// the bottom/right (TF 'same') has windows {1,2,4,5}, {3,6}, {7,8}, {9}.
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	want := directMaxPool(x, 1, 1, 3, 3, 2, 2, 2, 2, 0, 1, 0, 1)
	if w := []float64{5, 6, 8, 9}; !equal(want, w) {
		t.Fatalf("direct max pool %v, want %v", want, w)
	}
	g := G.NewGraph()
	xn := G.NewTensor(g, tensor.Float64, 4, G.WithShape(1, 1, 3, 3), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(1, 1, 3, 3), tensor.WithBacking(x))))
	y, err := G.MaxPool2D(xn, tensor.Shape{2, 2}, []int{0, 1, 0, 1}, []int{2, 2})
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := y.Value().Data().([]float64)
	if equal(got, want) {
		t.Fatalf("Gorgonia's asymmetric MaxPool2D padding now gives the right values %v; the trap may be fixed", got)
	}
	t.Logf("Gorgonia MaxPool2D pad (0,1,0,1): %v, direct: %v", got, want)
	// Padding is two numbers in MaxPool2D, so asymmetric padding cannot be asked for, and
	// padding beyond half the kernel (where windows could be all padding) is refused.
	if _, err := (MaxPool2D{Kernel: [2]int{2, 2}, Padding: [2]int{2, 0}}).OutputShape([]int{1, 3, 3}); err == nil {
		t.Fatal("padding larger than half the kernel accepted")
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
