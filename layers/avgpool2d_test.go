package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
)

// TestAvgPoolByHand pools the 3×3 image 1…9 (row-major) with a 2×2 kernel, stride 2 and
// padding 1: the windows hold {1}, {2, 3}, {4, 7} and {5, 6, 8, 9} real cells, so with
// padding left out of the mean the output is 1, 2.5, 5.5, 7. The global average is 5.
func TestAvgPoolByHand(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, tc := range []struct {
		l    Layer
		want []float64
	}{
		{AvgPool2D{Kernel: [2]int{2, 2}, Padding: [2]int{1, 1}}, []float64{1, 2.5, 5.5, 7}},
		{GlobalAvgPool2D{}, []float64{5}},
	} {
		ls := []Layer{tc.l, Flatten{}}
		got := stackForward(t, ls, []int{1, 3, 3}, 1, [][][]float64{nil, nil}, x)
		assertNear(t, tc.l.Kind()+" gorgonia", got, tc.want, 1e-14)
		nv, err := NewNative[float64](ls, []int{1, 3, 3}, 1, [][][]float64{nil, nil}, false)
		if err != nil {
			t.Fatal(err)
		}
		copy(nv.Input(), x)
		nv.Prepare()
		nv.Forward(0, 0, 1)
		assertNear(t, tc.l.Kind()+" native", nv.Logits(), tc.want, 1e-14)
	}
}

func TestAvgPoolShapes(t *testing.T) {
	for _, tc := range []struct {
		l  Layer
		in []int
	}{
		{AvgPool2D{Kernel: [2]int{2, 2}, Padding: [2]int{2, 0}}, []int{1, 4, 4}},
		{AvgPool2D{Kernel: [2]int{5, 5}}, []int{1, 4, 4}},
		{AvgPool2D{}, []int{1, 4, 4}},
		{GlobalAvgPool2D{}, []int{16}},
	} {
		if _, err := tc.l.OutputShape(tc.in); err == nil {
			t.Errorf("%+v accepted input %v", tc.l, tc.in)
		}
	}
	if s, _ := (GlobalAvgPool2D{}).OutputShape([]int{5, 3, 4}); len(s) != 3 || s[0] != 5 || s[1] != 1 || s[2] != 1 {
		t.Errorf("global average pool of 5×3×4: %v", s)
	}
}

var avgPoolStacks = []struct {
	name string
	in   []int
	ls   []Layer
}{
	{"conv-avgpool", []int{2, 7, 6}, []Layer{
		Conv2D{Filters: 3, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, Tanh{},
		AvgPool2D{Kernel: [2]int{3, 2}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}},
		Conv2D{Filters: 4, Kernel: [2]int{2, 2}}, ReLU{},
		GlobalAvgPool2D{}, Flatten{}, Dense{Units: 3}}},
	{"avgpool-first", []int{3, 6, 6}, []Layer{AvgPool2D{Kernel: [2]int{2, 2}}, Flatten{}, Dense{Units: 2}}},
}

// TestAvgPoolPerExampleGradients holds the native kernels' forward pass to the graph and
// the per-example gradients of stacks with average pooling (native float64 and float32,
// and the graph's taps) to batch-1 reverse mode, as for GroupNorm.
func TestAvgPoolPerExampleGradients(t *testing.T) {
	const b = 4
	for si, st := range avgPoolStacks {
		t.Run(st.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(si), 17))
			params, x, out := randomStack(rng, st.ls, st.in, b)
			r := randomValues(rng, b*num.Prod(out))
			logits, gz, tin, taps := stackReferenceTaps(t, st.ls, st.in, b, params, x, r)
			nv, err := NewNative[float64](st.ls, st.in, b, params, false)
			if err != nil {
				t.Fatal(err)
			}
			copy(nv.Input(), x)
			nv.Prepare()
			for lo := 0; lo < b; lo += nv.Chunk() {
				nv.Forward(0, lo, min(lo+nv.Chunk(), b))
			}
			assertRel(t, "logits", nv.Logits(), logits, 1e-12)
			var bound []clipping.Gradient[float64]
			for l, tp := range taps {
				bound = append(bound, clipping.Bind(tp.Shape, tin[l], gz[l]))
			}
			graph := perExample(t, bound, b)
			want := checkNativeExampleGradients(t, st.ls, st.in, b, params, x, r)
			for i := range b {
				assertRel(t, fmt.Sprintf("example %d, graph taps", i), graph[i], want[i], 1e-10)
			}
		})
	}
}
