package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/cpupath"
	"github.com/privtrain/privtrain/internal/num"
)

// TestGroupNormByHand normalises one 2×1×2 image (channels (1, 2) and (3, 4)) by hand:
// one group has mean 2.5 and variance 1.25; two groups (one per channel) have means 1.5
// and 3.5 and variance 0.25 each. γ = (2, −1), β = (0.5, 0).
func TestGroupNormByHand(t *testing.T) {
	x := []float64{1, 2, 3, 4}
	params := [][]float64{{2, -1}, {0.5, 0}}
	s1 := math.Sqrt(1.25 + 1e-5)
	s2 := math.Sqrt(0.25 + 1e-5)
	for _, tc := range []struct {
		l    GroupNorm
		want []float64
	}{
		{GroupNorm{Groups: 1}, []float64{2*-1.5/s1 + 0.5, 2*-0.5/s1 + 0.5, -0.5 / s1, -1.5 / s1}},
		{GroupNorm{Groups: 2}, []float64{2*-0.5/s2 + 0.5, 2*0.5/s2 + 0.5, 0.5 / s2, -0.5 / s2}},
		{GroupNorm{Groups: 1, NoAffine: true}, []float64{-1.5 / s1, -0.5 / s1, 0.5 / s1, 1.5 / s1}},
	} {
		ps := [][][]float64{params, nil}
		if tc.l.NoAffine {
			ps[0] = nil
		}
		ls := []Layer{tc.l, Flatten{}}
		got := stackForward(t, ls, []int{2, 1, 2}, 1, ps, x)
		assertNear(t, fmt.Sprintf("%+v gorgonia", tc.l), got, tc.want, 1e-12)
		nv, err := NewNative[float64](ls, []int{2, 1, 2}, 1, ps, false)
		if err != nil {
			t.Fatal(err)
		}
		copy(nv.Input(), x)
		nv.Prepare()
		nv.Forward(0, 0, 1)
		assertNear(t, fmt.Sprintf("%+v native", tc.l), nv.Logits(), tc.want, 1e-12)
	}
}

func TestGroupNormShapes(t *testing.T) {
	for _, tc := range []struct {
		l  GroupNorm
		in []int
	}{{GroupNorm{Groups: 3}, []int{4, 2, 2}}, {GroupNorm{}, []int{4, 2, 2}}, {GroupNorm{Groups: 1}, []int{4}}} {
		if _, err := tc.l.OutputShape(tc.in); err == nil {
			t.Errorf("%+v accepted input %v", tc.l, tc.in)
		}
	}
	ps := GroupNorm{Groups: 2}.Params([]int{6, 3, 3})
	if len(ps) != 2 || ps[0].Name != "weight" || ps[0].Init != (Ones{}) || ps[1].Name != "bias" || ps[1].Init != (Zeros{}) || num.Prod(ps[0].Shape) != 6 {
		t.Errorf("params %+v", ps)
	}
	if ps := (GroupNorm{Groups: 2, NoAffine: true}).Params([]int{6, 3, 3}); ps != nil {
		t.Errorf("NoAffine params %+v", ps)
	}
}

var groupNormStacks = []struct {
	name string
	in   []int
	ls   []Layer
}{
	{"layernorm-dense", []int{3, 4, 5}, []Layer{GroupNorm{Groups: 1}, Flatten{}, Dense{Units: 4}}},
	{"conv-gn-relu", []int{2, 6, 5}, []Layer{
		Conv2D{Filters: 6, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, GroupNorm{Groups: 3}, ReLU{},
		Conv2D{Filters: 4, Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}}, Tanh{}, GroupNorm{Groups: 4},
		Flatten{}, Dense{Units: 3}}},
	{"fixed-gn-first", []int{4, 3, 3}, []Layer{GroupNorm{Groups: 2, NoAffine: true}, Conv2D{Filters: 2, Kernel: [2]int{2, 2}}, ReLU{}, Flatten{}, Dense{Units: 3}}},
	// Channels a multiple of 8: float32 runs the AVX-512 kernels where there are any.
	{"wide-channels", []int{8, 3, 3}, []Layer{GroupNorm{Groups: 2, NoAffine: true},
		Conv2D{Filters: 16, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, GroupNorm{Groups: 4}, ReLU{},
		Conv2D{Filters: 8, Kernel: [2]int{2, 2}}, GroupNorm{Groups: 8}, Flatten{}, Dense{Units: 3}}},
}

// randomStack draws parameters (γ around 1) and input for a stack.
func randomStack(rng *rand.Rand, ls []Layer, in []int, b int) (params [][][]float64, x []float64, out []int) {
	params = make([][][]float64, len(ls))
	cur := in
	for li, l := range ls {
		for _, p := range l.Params(cur) {
			v := randomValues(rng, num.Prod(p.Shape))
			if p.Init == (Ones{}) {
				for j := range v {
					v[j] = 1 + v[j]/2
				}
			}
			params[li] = append(params[li], v)
		}
		cur, _ = l.OutputShape(cur)
	}
	return params, randomValues(rng, b*num.Prod(in)), cur
}

// bruteExampleGradient is the gradient of Σ_k r_k·logits_k with respect to every
// parameter (flat layout) for ONE example x, by Gorgonia's reverse mode on a batch-1
// graph: an independent reference for per-example gradients.
func bruteExampleGradient(t *testing.T, ls []Layer, in []int, params [][][]float64, x, r []float64) []float64 {
	t.Helper()
	g := G.NewGraph()
	shape := append([]int{1}, in...)
	h := G.NewTensor(g, tensor.Float64, len(shape), G.WithShape(shape...), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), x...)))))
	cur := in
	var wrt G.Nodes
	for li, l := range ls {
		var nodes []*G.Node
		for j, p := range l.Params(cur) {
			gs := p.GraphShape()
			n := G.NewTensor(g, tensor.Float64, len(gs), G.WithShape(gs...), G.WithName(fmt.Sprintf("p%d_%d", li, j)),
				G.WithValue(tensor.New(tensor.WithShape(gs...), tensor.WithBacking(append([]float64(nil), params[li][j]...)))))
			nodes = append(nodes, n)
			wrt = append(wrt, n)
		}
		var err error
		if h, _, err = l.Apply(h, nodes); err != nil {
			t.Fatal(err)
		}
		cur, _ = l.OutputShape(cur)
	}
	rs := h.Shape().Clone()
	rn := G.NewTensor(g, tensor.Float64, len(rs), G.WithShape(rs...), G.WithName("r"),
		G.WithValue(tensor.New(tensor.WithShape(rs...), tensor.WithBacking(append([]float64(nil), r...)))))
	loss := G.Must(G.Sum(G.Must(G.HadamardProd(h, rn))))
	grads, err := G.Grad(loss, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]*G.Value, len(grads))
	for j, gr := range grads {
		vals[j] = new(G.Value)
		*vals[j] = tensor.New(tensor.WithShape(gr.Shape().Clone()...), tensor.Of(tensor.Float64))
		G.Read(gr, vals[j])
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	var flat []float64
	for _, v := range vals {
		flat = append(flat, (*v).Data().([]float64)...)
	}
	return flat
}

// checkNativeExampleGradients holds the stack's native per-example gradients, float64 to
// 1e-10 and float32 to float32 precision (2e-5), to batch-1 reverse mode
// (bruteExampleGradient), example by example, and returns the reverse-mode gradients for
// further comparisons.
func checkNativeExampleGradients(t *testing.T, ls []Layer, in []int, b int, params [][][]float64, x, r []float64) [][]float64 {
	t.Helper()
	n, k := num.Prod(in), len(r)/b
	g64 := nativeExampleGradients[float64](t, ls, in, b, params, x, r)
	g32 := nativeExampleGradients[float32](t, ls, in, b, params, x, r)
	want := make([][]float64, b)
	for i := range b {
		want[i] = bruteExampleGradient(t, ls, in, params, x[i*n:(i+1)*n], r[i*k:(i+1)*k])
		assertRel(t, fmt.Sprintf("example %d, native float64", i), g64[i], want[i], 1e-10)
		assertRel(t, fmt.Sprintf("example %d, native float32", i), g32[i], want[i], 2e-5)
	}
	return want
}

// nativeExampleGradients runs the stack natively in T on a batch and returns every
// example's per-example gradient (from the taps through clipping) and the logits.
func nativeExampleGradients[T num.Float](t *testing.T, ls []Layer, in []int, b int, params [][][]float64, x, r []float64) [][]float64 {
	t.Helper()
	ps := make([][][]T, len(params))
	for li, p := range params {
		for _, v := range p {
			ps[li] = append(ps[li], convertTo[T](v))
		}
	}
	nv, err := NewNative[T](ls, in, b, ps, true)
	if err != nil {
		t.Fatal(err)
	}
	copy(nv.Input(), convertTo[T](x))
	nv.Prepare()
	rt := convertTo[T](r)
	k := len(r) / b
	for lo := 0; lo < b; lo += nv.Chunk() {
		hi := min(lo+nv.Chunk(), b)
		nv.Forward(0, lo, hi)
		nv.Backward(0, lo, hi, rt[lo*k:hi*k])
	}
	return perExample(t, nv.Taps(), b)
}

func perExample[T num.Float](t *testing.T, taps []clipping.Gradient[T], b int) [][]float64 {
	t.Helper()
	ws, err := clipping.NewWorkspace(taps, b)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, b)
	for i := range b {
		out[i] = make([]float64, ws.NumParams())
		if err := ws.PerExample(i, out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func convertTo[T num.Float](v []float64) []T {
	out := make([]T, len(v))
	for j, x := range v {
		out[j] = T(x)
	}
	return out
}

// TestGroupNormPerExampleGradients checks the per-example gradients of stacks with
// GroupNorm, natively (float64 to 1e-10, float32 to float32 precision) and through the
// Gorgonia graph's taps (float64), against batch-1 reverse mode, example by example.
func TestGroupNormPerExampleGradients(t *testing.T) {
	const b = 5
	for si, st := range groupNormStacks {
		t.Run(st.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(si), 11))
			params, x, out := randomStack(rng, st.ls, st.in, b)
			r := randomValues(rng, b*num.Prod(out))
			want := checkNativeExampleGradients(t, st.ls, st.in, b, params, x, r)
			_, gz, tin, taps := stackReferenceTaps(t, st.ls, st.in, b, params, x, r)
			var bound []clipping.Gradient[float64]
			for l, tp := range taps {
				bound = append(bound, clipping.Bind(tp.Shape, tin[l], gz[l]))
			}
			graph := perExample(t, bound, b)
			for i := range b {
				assertRel(t, fmt.Sprintf("example %d, graph taps", i), graph[i], want[i], 1e-10)
			}
		})
	}
}

// TestGroupNormNativeMatchesGorgonia compares the logits of the native kernels (forward
// only) with the graph's, float64; the backward pass is held to the graph by
// TestGroupNormPerExampleGradients.
func TestGroupNormNativeMatchesGorgonia(t *testing.T) {
	const b = 6
	for si, st := range groupNormStacks {
		t.Run(st.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(si), 13))
			params, x, _ := randomStack(rng, st.ls, st.in, b)
			wantLogits := stackForward(t, st.ls, st.in, b, params, x)
			nv, err := NewNative[float64](st.ls, st.in, b, params, false)
			if err != nil {
				t.Fatal(err)
			}
			copy(nv.Input(), x)
			nv.Prepare()
			for lo := 0; lo < b; lo += nv.Chunk() {
				nv.Forward(1, lo, min(lo+nv.Chunk(), b))
			}
			assertRel(t, "logits", nv.Logits(), wantLogits, 1e-12)
		})
	}
}

// TestGroupNormAssemblyMatchesGo runs the GroupNorm stacks in float32 with each CPU path's
// kernels of groupnorm_amd64.s and with their Go versions (groupnorm_kernels.go): the
// same arithmetic in the same order, so logits, input gradients and per-example
// gradients must agree bit for bit.
func TestGroupNormAssemblyMatchesGo(t *testing.T) {
	const b = 5
	for si, st := range groupNormStacks {
		for _, p := range cpupath.Supported() {
			t.Run(st.name+"/"+p.String(), func(t *testing.T) {
				defer cpupath.Force(p)()
				rng := rand.New(rand.NewPCG(uint64(si), 17))
				params, x, out := randomStack(rng, st.ls, st.in, b)
				r := randomValues(rng, b*num.Prod(out))
				run := func(asm bool) ([]float32, [][]float64) {
					defer func(v bool) { goKernels = v }(goKernels)
					goKernels = !asm
					g := nativeExampleGradients[float32](t, st.ls, st.in, b, params, x, r)
					ps := make([][][]float32, len(params))
					for li, p := range params {
						for _, v := range p {
							ps[li] = append(ps[li], convertTo[float32](v))
						}
					}
					nv, err := NewNative[float32](st.ls, st.in, b, ps, false)
					if err != nil {
						t.Fatal(err)
					}
					copy(nv.Input(), convertTo[float32](x))
					nv.Prepare()
					for lo := 0; lo < b; lo += nv.Chunk() {
						nv.Forward(0, lo, min(lo+nv.Chunk(), b))
					}
					return append([]float32(nil), nv.Logits()...), g
				}
				la, ga := run(true)
				lg, gg := run(false)
				for j := range la {
					if math.Float32bits(la[j]) != math.Float32bits(lg[j]) {
						t.Fatalf("logit %d: assembly %v, Go %v", j, la[j], lg[j])
					}
				}
				for i := range ga {
					for j := range ga[i] {
						if math.Float64bits(ga[i][j]) != math.Float64bits(gg[i][j]) {
							t.Fatalf("example %d, parameter %d: assembly %v, Go %v", i, j, ga[i][j], gg[i][j])
						}
					}
				}
			})
		}
	}
}
