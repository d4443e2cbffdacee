package layers

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// TestConv2DMatchesDirectConvolution compares the layer with the convolution sum written
// out, and its tap input with im2col written out.
func TestConv2DMatchesDirectConvolution(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Conv2D
		in   []int
	}{
		{"mnist conv1 shape", Conv2D{Filters: 3, Kernel: [2]int{8, 8}, Stride: [2]int{2, 2}, Padding: [2]int{3, 3}}, []int{1, 12, 12}},
		{"valid stride 2", Conv2D{Filters: 4, Kernel: [2]int{4, 4}, Stride: [2]int{2, 2}}, []int{3, 9, 9}},
		{"rectangular", Conv2D{Filters: 2, Kernel: [2]int{3, 2}, Stride: [2]int{1, 2}, Padding: [2]int{1, 0}}, []int{2, 5, 6}},
		{"no bias", Conv2D{Filters: 2, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}, NoBias: true}, []int{2, 4, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const B = 3
			r := runLayer(t, tc.l, B, tc.in, rand.New(rand.NewPCG(1, 2)))
			checkConv(t, tc.l, tc.in, B, r)
		})
	}
}

func checkConv(t *testing.T, l Conv2D, in []int, B int, r applied) {
	t.Helper()
	C, H, W := in[0], in[1], in[2]
	out, _ := l.OutputShape(in)
	F, OH, OW := out[0], out[1], out[2]
	kh, kw := l.Kernel[0], l.Kernel[1]
	s := l.stride()
	w := r.params[0]
	want := make([]float64, B*F*OH*OW)
	k := C * kh * kw
	wantU := make([]float64, B*OH*OW*k)
	for b := range B {
		for oh := range OH {
			for ow := range OW {
				for c := range C {
					for i := range kh {
						for j := range kw {
							v, _ := padded(r.x, C, H, W, b, c, oh*s[0]-l.Padding[0]+i, ow*s[1]-l.Padding[1]+j)
							wantU[((b*OH+oh)*OW+ow)*k+(c*kh+i)*kw+j] = v
							for f := range F {
								want[((b*F+f)*OH+oh)*OW+ow] += w[((f*C+c)*kh+i)*kw+j] * v
							}
						}
					}
				}
				if !l.NoBias {
					for f := range F {
						want[((b*F+f)*OH+oh)*OW+ow] += r.params[1][f]
					}
				}
			}
		}
	}
	assertNear(t, "conv output", r.out, want, 1e-12)
	assertNear(t, "im2col tap", r.tapIn, wantU, 0)
	if ts := r.tap.Shape.(convGradShape); ts.InDim != k || ts.OutDim != F || ts.Positions != OH*OW || ts.Bias == l.NoBias {
		t.Fatalf("tap %+v", *r.tap)
	}
}

// TestConv2DIm2ColIsShared checks that asking for the im2col node adds nothing: the tap
// is the node Conv2d multiplies, not a second im2col.
func TestConv2DIm2ColIsShared(t *testing.T) {
	l := Conv2D{Filters: 2, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}
	r := runLayer(t, l, 2, []int{1, 5, 5}, rand.New(rand.NewPCG(3, 4)))
	im2cols := 0
	for _, n := range r.tap.Z.Graph().AllNodes() {
		if n.Op() != nil && len(n.Op().String()) >= 6 && n.Op().String()[:6] == "im2col" {
			im2cols++
		}
	}
	if im2cols != 1 {
		t.Fatalf("graph holds %d im2col nodes, want 1", im2cols)
	}
}

// TestCenterCropThenConv checks the crop (a strided view) followed by a convolution.
func TestCenterCropThenConv(t *testing.T) {
	const B = 2
	in := []int{2, 8, 7}
	crop := CenterCrop{Height: 4, Width: 5}
	r := runLayer(t, crop, B, in, rand.New(rand.NewPCG(5, 6)))
	want := make([]float64, 0, B*2*4*5)
	for b := range B {
		for c := range 2 {
			for i := range 4 {
				for j := range 5 {
					v, _ := padded(r.x, 2, 8, 7, b, c, 2+i, 1+j)
					want = append(want, v)
				}
			}
		}
	}
	assertNear(t, "crop", r.out, want, 0)

	seq := sequence{crop, Conv2D{Filters: 3, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}}
	rs := runLayer(t, seq, B, in, rand.New(rand.NewPCG(7, 8)))
	// Rebuild the expectation from the cropped input through checkConv.
	cropped := make([]float64, 0, B*2*4*5)
	for b := range B {
		for c := range 2 {
			for i := range 4 {
				for j := range 5 {
					v, _ := padded(rs.x, 2, 8, 7, b, c, 2+i, 1+j)
					cropped = append(cropped, v)
				}
			}
		}
	}
	rs.x = cropped
	checkConv(t, seq[1].(Conv2D), []int{2, 4, 5}, B, rs)
}

// sequence applies layers one after another; its parameters and tap are the last layer's.
type sequence []Layer

func (s sequence) Kind() string { return "sequence" }
func (s sequence) OutputShape(in []int) ([]int, error) {
	for _, l := range s {
		var err error
		if in, err = l.OutputShape(in); err != nil {
			return nil, err
		}
	}
	return in, nil
}
func (s sequence) Params(in []int) []ParamSpec {
	for _, l := range s[:len(s)-1] {
		in, _ = l.OutputShape(in)
	}
	return s[len(s)-1].Params(in)
}
func (s sequence) Apply(x *G.Node, params []*G.Node) (*G.Node, *Tap, error) {
	var tap *Tap
	for i, l := range s {
		var p []*G.Node
		if i == len(s)-1 {
			p = params
		}
		var err error
		if x, tap, err = l.Apply(x, p); err != nil {
			return nil, nil, err
		}
	}
	return x, tap, nil
}

func TestConv2DShapeErrors(t *testing.T) {
	for _, tc := range []struct {
		l  Conv2D
		in []int
	}{
		{Conv2D{Filters: 0, Kernel: [2]int{3, 3}}, []int{1, 5, 5}},
		{Conv2D{Filters: 1, Kernel: [2]int{0, 3}}, []int{1, 5, 5}},
		{Conv2D{Filters: 1, Kernel: [2]int{3, 3}, Padding: [2]int{-1, 0}}, []int{1, 5, 5}},
		{Conv2D{Filters: 1, Kernel: [2]int{3, 3}, Stride: [2]int{-1, 1}}, []int{1, 5, 5}},
		{Conv2D{Filters: 1, Kernel: [2]int{6, 3}}, []int{1, 5, 5}},
		{Conv2D{Filters: 1, Kernel: [2]int{3, 3}}, []int{25}},
	} {
		if _, err := tc.l.OutputShape(tc.in); err == nil {
			t.Errorf("%+v on %v: no error", tc.l, tc.in)
		}
	}
}
