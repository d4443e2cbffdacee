package layers

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/internal/num"
)

func TestSkippable(t *testing.T) {
	for _, tc := range []struct {
		l    Layer
		want bool
	}{
		{GroupNorm{Groups: 3, NoAffine: true}, true}, {&GroupNorm{Groups: 3, NoAffine: true}, true},
		{GroupNorm{Groups: 3}, false}, // γ and β are learnt
		{Flatten{}, true}, {ReLU{}, true}, {Tanh{}, true}, {MaxPool2D{Kernel: [2]int{2, 2}}, true}, {AvgPool2D{Kernel: [2]int{2, 2}}, true},
		{Dense{Units: 2}, false}, {Conv2D{Filters: 2, Kernel: [2]int{1, 1}}, false}, {Scattering2D{J: 1, L: 4}, false},
		{(*Flatten)(nil), false}, {nil, false},
	} {
		if got := Skippable(tc.l); got != tc.want {
			t.Errorf("Skippable(%#v) = %v, want %v", tc.l, got, tc.want)
		}
	}
}

// TestNativeAfterMatchesNative: NewNativeFront followed by a NewNativeAfter program computes
// bit for bit the logits of NewNative on the raw input, for a GroupNorm, Flatten, Dense
// stack (the Dense then reads the NHWC order) and a GroupNorm, Conv stack; skipping a layer
// with parameters, or every layer, is refused.
func TestNativeAfterMatchesNative(t *testing.T) {
	const b = 7
	in := []int{6, 3, 3}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name string
		ls   []Layer
		skip int
		out  int
	}{
		{"linear", []Layer{GroupNorm{Groups: 2, NoAffine: true}, Flatten{}, Dense{Units: 4}}, 2, 54},
		{"conv", []Layer{GroupNorm{Groups: 3, NoAffine: true}, ReLU{}, Conv2D{Filters: 2, Kernel: [2]int{2, 2}}, Flatten{}, Dense{Units: 4}}, 2, 54},
	} {
		params := make([][][]float32, len(tc.ls))
		shape := in
		for i, l := range tc.ls {
			for _, p := range l.Params(shape) {
				v := make([]float32, num.Prod(p.Shape))
				for j := range v {
					v[j] = float32(rng.NormFloat64())
				}
				params[i] = append(params[i], v)
			}
			shape, _ = l.OutputShape(shape)
		}
		x := make([]float32, b*num.Prod(in))
		for j := range x {
			x[j] = float32(rng.NormFloat64()*3 + 1)
		}
		ref, err := NewNative(tc.ls, in, b, params, false)
		if err != nil {
			t.Fatal(err)
		}
		copy(ref.Input(), x)
		ref.Prepare()
		for lo := 0; lo < b; lo += ref.Chunk() {
			ref.Forward(0, lo, min(b, lo+ref.Chunk()))
		}
		front, n, err := NewNativeFront(tc.ls, in, tc.skip)
		if err != nil {
			t.Fatal(err)
		}
		feats, err := front(x)
		if err != nil || n != tc.out || len(feats) != b*n {
			t.Fatalf("%s: %d features per example (%d in all), %v; want %d", tc.name, n, len(feats), err, tc.out)
		}
		nv, err := NewNativeAfter(tc.ls, in, b, params, false, tc.skip)
		if err != nil {
			t.Fatal(err)
		}
		if nv.InputLen() != n || nv.Chunk() != ref.Chunk() {
			t.Fatalf("%s: input %d values, chunk %d; front end %d, NewNative's chunk %d", tc.name, nv.InputLen(), nv.Chunk(), n, ref.Chunk())
		}
		copy(nv.Input(), feats)
		nv.Prepare()
		for lo := 0; lo < b; lo += nv.Chunk() {
			nv.Forward(0, lo, min(b, lo+nv.Chunk()))
		}
		if !slices.Equal(nv.Logits(), ref.Logits()) {
			t.Errorf("%s: logits after the native front end differ from NewNative's", tc.name)
		}
		if _, err := NewNativeAfter(tc.ls, in, b, params, true, len(tc.ls)); err == nil {
			t.Errorf("%s: skipping every layer accepted", tc.name)
		}
		if _, err := NewNativeAfter(tc.ls, in, b, params, true, tc.skip+1); err == nil {
			t.Errorf("%s: skipping a layer with parameters accepted", tc.name)
		}
	}
	affine := []Layer{GroupNorm{Groups: 2}, Flatten{}, Dense{Units: 4}}
	if _, _, err := NewNativeFront(affine, in, 1); err == nil {
		t.Error("a GroupNorm with γ and β skipped")
	}
}
