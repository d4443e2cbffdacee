package layers

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/cpupath"
	"github.com/privtrain/privtrain/internal/num"
)

// stackReference runs layers as a Gorgonia graph on x (batch b): the logits, and after ONE
// backpropagation of Σ logits ⊙ r the gradient at every tap's Z and every tap's In, in
// Gorgonia's layouts (conv Z NCHW, im2col [B, OH, OW, k] with k ordered (c, kh, kw)).
func stackReference(t *testing.T, ls []Layer, in []int, b int, params [][][]float64, x, r []float64) (logits []float64, gradZ, tapIn [][]float64) {
	t.Helper()
	logits, gradZ, tapIn, _ = stackReferenceTaps(t, ls, in, b, params, x, r)
	return logits, gradZ, tapIn
}

// stackReferenceTaps is stackReference with the taps.
func stackReferenceTaps(t *testing.T, ls []Layer, in []int, b int, params [][][]float64, x, r []float64) (logits []float64, gradZ, tapIn [][]float64, taps []*Tap) {
	t.Helper()
	g := G.NewGraph()
	shape := append([]int{b}, in...)
	h := G.NewTensor(g, tensor.Float64, len(shape), G.WithShape(shape...), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), x...)))))
	cur := in
	for li, l := range ls {
		var nodes []*G.Node
		for j, p := range l.Params(cur) {
			gs := p.GraphShape()
			nodes = append(nodes, G.NewTensor(g, tensor.Float64, len(gs), G.WithShape(gs...), G.WithName(fmt.Sprintf("p%d_%d", li, j)),
				G.WithValue(tensor.New(tensor.WithShape(gs...), tensor.WithBacking(append([]float64(nil), params[li][j]...))))))
		}
		var tap *Tap
		var err error
		if h, tap, err = l.Apply(h, nodes); err != nil {
			t.Fatal(err)
		}
		if tap != nil {
			taps = append(taps, tap)
		}
		if cur, err = l.OutputShape(cur); err != nil {
			t.Fatal(err)
		}
	}
	rs := h.Shape().Clone()
	rn := G.NewTensor(g, tensor.Float64, len(rs), G.WithShape(rs...), G.WithName("r"),
		G.WithValue(tensor.New(tensor.WithShape(rs...), tensor.WithBacking(append([]float64(nil), r...)))))
	loss := G.Must(G.Sum(G.Must(G.HadamardProd(h, rn))))
	zs := make(G.Nodes, len(taps))
	for l, tp := range taps {
		zs[l] = tp.Z
	}
	one := g.AddNode(G.NewConstant(1.0))
	grads, err := G.Backpropagate(G.Nodes{loss}, G.Nodes{one}, zs)
	if err != nil {
		t.Fatal(err)
	}
	// Read into preallocated values: the tape machine may reuse a register after its last
	// reader, and a Read into a nil Value would only alias it.
	read := func(n *G.Node) *G.Value {
		v := new(G.Value)
		*v = tensor.New(tensor.WithShape(n.Shape().Clone()...), tensor.Of(tensor.Float64))
		G.Read(n, v)
		return v
	}
	gv := make([]*G.Value, len(taps))
	iv := make([]*G.Value, len(taps))
	for l, tp := range taps {
		gv[l] = read(grads[l])
		iv[l] = read(tp.In)
	}
	lv := read(h)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	for l := range taps {
		gradZ = append(gradZ, append([]float64(nil), (*gv[l]).Data().([]float64)...))
		tapIn = append(tapIn, append([]float64(nil), (*iv[l]).Data().([]float64)...))
	}
	// A dense tap's In read in the same run can be clobbered: after Tanh → Flatten the
	// Reshape's value shares Tanh's output, which Tanh's derivative then overwrites. Take
	// it from a forward-only graph of the layers before the dense layer instead.
	ti := 0
	for li, l := range ls {
		switch l := l.(type) {
		case Conv2D, *Conv2D:
			ti++
		case GroupNorm:
			if !l.NoAffine {
				ti++
			}
		case Dense, *Dense:
			if li > 0 {
				tapIn[ti] = stackForward(t, ls[:li], in, b, params, x)
			}
			ti++
		}
	}
	return append([]float64(nil), (*lv).Data().([]float64)...), gradZ, tapIn, taps
}

// stackForward is the output of a forward-only Gorgonia graph of ls.
func stackForward(t *testing.T, ls []Layer, in []int, b int, params [][][]float64, x []float64) []float64 {
	t.Helper()
	g := G.NewGraph()
	shape := append([]int{b}, in...)
	h := G.NewTensor(g, tensor.Float64, len(shape), G.WithShape(shape...), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), x...)))))
	cur := in
	for li, l := range ls {
		var nodes []*G.Node
		for j, p := range l.Params(cur) {
			gs := p.GraphShape()
			nodes = append(nodes, G.NewTensor(g, tensor.Float64, len(gs), G.WithShape(gs...), G.WithName(fmt.Sprintf("p%d_%d", li, j)),
				G.WithValue(tensor.New(tensor.WithShape(gs...), tensor.WithBacking(append([]float64(nil), params[li][j]...))))))
		}
		var err error
		if h, _, err = l.Apply(h, nodes); err != nil {
			t.Fatal(err)
		}
		if cur, err = l.OutputShape(cur); err != nil {
			t.Fatal(err)
		}
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	return append([]float64(nil), h.Value().Data().([]float64)...)
}

var nativeStacks = []struct {
	name string
	in   []int
	ls   []Layer
}{
	{"conv-relu", []int{2, 5, 6}, []Layer{Conv2D{Filters: 3, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, ReLU{}, Flatten{}}},
	{"mnist-like", []int{1, 28, 28}, []Layer{
		Conv2D{Filters: 4, Kernel: [2]int{8, 8}, Stride: [2]int{2, 2}, Padding: [2]int{3, 3}}, ReLU{},
		MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}},
		Conv2D{Filters: 5, Kernel: [2]int{4, 4}, Stride: [2]int{2, 2}}, Tanh{},
		MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}},
		Flatten{}, Dense{Units: 7}, ReLU{}, Dense{Units: 3}}},
	{"cifar-like", []int{3, 14, 13}, []Layer{
		CenterCrop{Height: 11, Width: 12},
		Conv2D{Filters: 4, Kernel: [2]int{5, 5}, Padding: [2]int{2, 2}}, ReLU{},
		MaxPool2D{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}},
		Conv2D{Filters: 3, Kernel: [2]int{5, 5}, Padding: [2]int{2, 2}}, Tanh{},
		MaxPool2D{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}},
		Flatten{}, Dense{Units: 6}, Tanh{}, Dense{Units: 5}, ReLU{}, Dense{Units: 4}}},
	{"logreg", []int{1, 4, 5}, []Layer{Flatten{}, Dense{Units: 3}}},
	{"odd-shapes", []int{2, 9, 7}, []Layer{
		&Conv2D{Filters: 3, Kernel: [2]int{3, 2}, Stride: [2]int{2, 1}, Padding: [2]int{1, 0}, NoBias: true},
		MaxPool2D{Kernel: [2]int{2, 3}, Stride: [2]int{1, 2}, Padding: [2]int{1, 1}}, ReLU{}, Tanh{},
		Flatten{}, Dense{Units: 4, NoBias: true}, ReLU{}, ReLU{}, Dense{Units: 2}}},
	{"dense-act-last", []int{6}, []Layer{Dense{Units: 5}, Tanh{}, Dense{Units: 3}, ReLU{}}},
	{"wide-channels", []int{3, 9, 9}, []Layer{ // full 16-lane vectors plus tails
		Conv2D{Filters: 20, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, ReLU{},
		MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}},
		Conv2D{Filters: 33, Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}}, ReLU{},
		MaxPool2D{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}},
		Flatten{}, Dense{Units: 5}}},
}

// TestNativeMatchesGorgonia runs each stack natively (several workers at once, in chunks)
// and as a Gorgonia graph, float64, and compares logits, taps' In and taps' GradZ.
func TestNativeMatchesGorgonia(t *testing.T) {
	const b = 7
	for si, st := range nativeStacks {
		t.Run(st.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(si), 3))
			params := make([][][]float64, len(st.ls))
			cur := st.in
			for li, l := range st.ls {
				for _, p := range l.Params(cur) {
					params[li] = append(params[li], randomValues(rng, num.Prod(p.Shape)))
				}
				var err error
				if cur, err = l.OutputShape(cur); err != nil {
					t.Fatal(err)
				}
			}
			x := randomValues(rng, b*num.Prod(st.in))
			r := randomValues(rng, b*num.Prod(cur))
			wantLogits, wantGZ, wantIn := stackReference(t, st.ls, st.in, b, params, x, r)

			nv, err := NewNative[float64](st.ls, st.in, b, params, true)
			if err != nil {
				t.Fatal(err)
			}
			copy(nv.Input(), x)
			nv.Prepare()
			k := num.Prod(cur)
			// Chunks of 1–3 rows on three workers at once.
			var wg sync.WaitGroup
			ranges := [][2]int{{0, 1}, {1, 3}, {3, 4}, {4, 7}}
			for w, rg := range ranges {
				lo, hi := rg[0], rg[1]
				if hi-lo > nv.Chunk() {
					t.Skipf("chunk %d too small for this test", nv.Chunk())
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					nv.Forward(w%3, lo, hi)
					nv.Backward(w%3, lo, hi, r[lo*k:hi*k])
				}()
				if w%3 == 2 {
					wg.Wait()
				}
			}
			wg.Wait()
			assertRel(t, "logits", nv.Logits(), wantLogits, 1e-12)
			taps := nv.Taps()
			if len(taps) != len(wantGZ) {
				t.Fatalf("%d taps, want %d", len(taps), len(wantGZ))
			}
			for l, g := range taps {
				tp := raw(g)
				gz, in := tp.GradZ, tapInput(tp, b)
				if tp.conv {
					gz = fromPositionsMajor(gz, b, tp.Positions, tp.OutDim)
				}
				assertRel(t, fmt.Sprintf("tap %d GradZ", l), gz, wantGZ[l], 1e-12)
				assertRel(t, fmt.Sprintf("tap %d In", l), in, wantIn[l], 1e-12)
			}

			// Patches of the rows of a worker's last Forward come from its scratch, equal
			// to rebuilt ones.
			nv.Forward(1, 4, 7)
			for _, g := range taps {
				tp := raw(g)
				if tp.Patches == nil {
					continue
				}
				n := tp.Positions * tp.InDim
				buf := make([]float64, n)
				for i := 4; i < 7; i++ {
					cached := tp.Patches(1, i, buf)
					if &cached[0] == &buf[0] {
						t.Fatalf("row %d of the last Forward was rebuilt, not taken from scratch", i)
					}
					assertNear(t, "cached patches", cached, tp.Patches(-1, i, buf), 0)
				}
				if u := tp.Patches(1, 3, buf); &u[0] != &buf[0] {
					t.Fatal("row outside the last Forward taken from scratch")
				}
			}

			// A forward-only Native gives the same logits.
			ev, err := NewNative[float64](st.ls, st.in, b, params, false)
			if err != nil {
				t.Fatal(err)
			}
			copy(ev.Input(), x)
			ev.Prepare()
			for lo := 0; lo < b; lo += ev.Chunk() {
				ev.Forward(0, lo, min(lo+ev.Chunk(), b))
			}
			assertRel(t, "forward-only logits", ev.Logits(), wantLogits, 1e-12)
		})
	}
}

// assertRel checks |got − want| ≤ rel·max|want| elementwise.
func assertRel(t *testing.T, what string, got, want []float64, rel float64) {
	t.Helper()
	var scale float64
	for _, v := range want {
		scale = max(scale, math.Abs(v))
	}
	assertNear(t, what, got, want, rel*scale)
}

// fromPositionsMajor turns [B × P × F] into [B × F × P].
func fromPositionsMajor(v []float64, b, p, f int) []float64 {
	out := make([]float64, len(v))
	for i := range b {
		for q := range p {
			for c := range f {
				out[(i*f+c)*p+q] = v[(i*p+q)*f+c]
			}
		}
	}
	return out
}

// rawTap is a native tap's buffers: a DenseGradient's or a Conv2DGradient's fields.
type rawTap[T num.Float] struct {
	conv                     bool
	In, GradZ                []T
	InDim, OutDim, Positions int
	InOrder                  []int
	Patches                  func(worker, i int, buf []T) []T
}

func raw[T num.Float](g clipping.Gradient[T]) rawTap[T] {
	if u, ok := g.(interface {
		Unwrap() clipping.ExampleKind[T]
	}); ok {
		c := u.Unwrap().(*Conv2DGradient[T])
		return rawTap[T]{conv: true, In: c.In, GradZ: c.GradZ, InDim: c.InDim, OutDim: c.OutDim, Positions: c.Positions,
			InOrder: c.InOrder, Patches: c.Patches}
	}
	d := g.(*DenseGradient[T])
	return rawTap[T]{In: d.In, GradZ: d.GradZ, InDim: d.InDim, OutDim: d.OutDim, Positions: 1, InOrder: d.InOrder}
}

// tapInput is a tap's input for the whole batch in the weight layout's column order: In,
// or the patches rebuilt example by example, with InOrder undone.
func tapInput[T num.Float](tp rawTap[T], b int) []T {
	in := tp.In
	if tp.Patches != nil {
		n := tp.Positions * tp.InDim
		in = make([]T, b*n)
		for i := range b {
			copy(in[i*n:(i+1)*n], tp.Patches(-1, i, make([]T, n)))
		}
	}
	if tp.InOrder == nil {
		return in
	}
	return unorder(in, tp.InOrder)
}

// unorder puts each row's column j at InOrder[j].
func unorder[T num.Float](v []T, order []int) []T {
	k := len(order)
	out := make([]T, len(v))
	for r := 0; r < len(v); r += k {
		for j, o := range order {
			out[r+o] = v[r+j]
		}
	}
	return out
}

type foreign struct{ ReLU }

func TestNativeRejectsForeignLayers(t *testing.T) {
	_, err := NewNative[float32]([]Layer{Flatten{}, foreign{}, Dense{Units: 2}}, []int{4}, 2, make([][][]float32, 3), true)
	if !errors.Is(err, ErrNotNative) {
		t.Fatalf("error %v, want ErrNotNative", err)
	}
	// Nor is it fused into the Dense before it, as a ReLU would be.
	_, err = NewNative[float32]([]Layer{Dense{Units: 2, NoBias: true}, foreign{}}, []int{4}, 2, [][][]float32{{make([]float32, 8)}, nil}, false)
	if !errors.Is(err, ErrNotNative) || !strings.Contains(err.Error(), "layer 1") {
		t.Fatalf("error %v, want ErrNotNative naming layer 1", err)
	}
}

// TestNativeAssemblyMatchesGo runs every stack in float32 with each CPU path's kernels of
// native_amd64.s (max-pool, im2col, col2im, ReLU) and with their Go versions: the
// same arithmetic in the same order, so the results must agree bit for bit.
func TestNativeAssemblyMatchesGo(t *testing.T) {
	const b = 6
	for si, st := range nativeStacks {
		for _, p := range cpupath.Supported() {
			testAssemblyMatchesGo(t, si, st.name+"/"+p.String(), st.in, st.ls, b, p)
		}
	}
}

// testAssemblyMatchesGo runs a stack on path p with this package's kernels and with their
// Go versions (goKernels; the products stay on p): the results must agree bit for bit.
func testAssemblyMatchesGo(t *testing.T, si int, name string, in []int, ls []Layer, b int, p cpupath.Path) {
	st := struct {
		in []int
		ls []Layer
	}{in, ls}
	{
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(si), 5))
			params, cur := randomParams32(rng, st.ls, st.in)
			x := toFloat32(randomValues(rng, b*num.Prod(st.in)))
			r := toFloat32(randomValues(rng, b*num.Prod(cur)))
			run := func(asm bool) ([]float32, [][]float32) {
				defer cpupath.Force(p)()
				defer func(v bool) { goKernels = v }(goKernels)
				goKernels = !asm
				nv, err := NewNative[float32](st.ls, st.in, b, params, true)
				if err != nil {
					t.Fatal(err)
				}
				copy(nv.Input(), x)
				nv.Prepare()
				k := num.Prod(cur)
				for lo := 0; lo < b; lo += nv.Chunk() {
					hi := min(lo+nv.Chunk(), b)
					nv.Forward(0, lo, hi)
					nv.Backward(0, lo, hi, r[lo*k:hi*k])
				}
				var out [][]float32
				for _, g := range nv.Taps() {
					tp := raw(g)
					out = append(out, append([]float32(nil), tp.GradZ...), tapInput(tp, b))
				}
				return append([]float32(nil), nv.Logits()...), out
			}
			la, ta := run(true)
			lg, tg := run(false)
			if !slices.Equal(la, lg) {
				t.Fatalf("logits differ:\n%v\n%v", la, lg)
			}
			for j := range ta {
				if !slices.Equal(ta[j], tg[j]) {
					t.Fatalf("tap array %d differs", j)
				}
			}
		})
	}
}

// randomParams32 draws every parameter of layers ls on input shape in (randomValues, in
// layer and ParamSpec order) and returns them with the output shape.
func randomParams32(rng *rand.Rand, ls []Layer, in []int) ([][][]float32, []int) {
	params := make([][][]float32, len(ls))
	cur := in
	for li, l := range ls {
		for _, p := range l.Params(cur) {
			params[li] = append(params[li], toFloat32(randomValues(rng, num.Prod(p.Shape))))
		}
		cur, _ = l.OutputShape(cur)
	}
	return params, cur
}

func toFloat32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
