// Package layertest is an independent oracle for a layer's per-example gradients, for the
// tests of every parametrised layer kind (see docs/architecture.md, "How to add … A layer").
//
// Check draws parameters θ, a batch of inputs x_i and a fixed random functional, and gives
// example i the loss
//
//	ℓ_i(θ) = Σ_j r_ij·y_ij + ½ Σ_j y_ij²,   y_i = layer(x_i; θ),
//
// then compares what the layer's per-example gradient kind (its Tap's clipping.Shape,
// bound to the batch's tap values and run through a clipping.Workspace; for a composite
// layer such as Residual, every nested tap's, in one Workspace) gives for every
// example with two references that share nothing with the kind:
//
//   - Gorgonia's symbolic gradient ∂ℓ_i/∂θ of that one example's loss, built from the
//     layer's forward graph alone (its Apply fragment on a batch of one and the loss
//     above; no tap, no per-example code);
//   - central finite differences of ℓ_i in float64, from forward runs of the same
//     batch-of-one graph.
//
// It also checks that the squared norm the Workspace clips by is ‖g_i‖² of the gradient
// the clipped sum adds: the norms it reports equal the reference's, the plain sum and the
// clipped sum with a huge bound equal Σ_i g_i, and with a bound below every norm (all
// examples clipped, and each example alone) the clipped sum equals Σ_i (C/‖g_i‖)·g_i and
// one example's clipped contribution has norm exactly C. The float32 binding of the kind
// is checked against the same references with a float32 tolerance.
//
// Where the layer has a native kernel, the native engine's kind (its own layout) and sums
// are checked as the float64 one, in float64 and in float32 on every CPU path the machine
// supports (internal/cpupath), through layers.Native alone (no per-layer code here):
//
//   - each native run first goes through a batch of other inputs and functionals, then
//     through the checked batch in chunks of one row, so a buffer that is not cleared
//     between calls or rows (per-example rows accumulated with +=, say) fails;
//   - the layer's input gradient is checked by running it behind a fixed random linear map
//     (a Dense for flat inputs, a 1×1 Conv2D for CHW images) and holding every parameter's
//     per-example gradient, the map's included, to Gorgonia's symbolic gradient of the
//     pair: the map's gradient is formed from what the layer hands down.
//
// This is the whole gate for a new layer: both mistakes that once passed every test (an
// input gradient missing a term, rows not cleared between calls) fail it.
package layertest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/cpupath"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/layers"
)

// Config sets a Check's sizes and tolerances; zero fields take the defaults.
type Config struct {
	// Batch is the number of examples (default 3); Seed seeds θ, x and r.
	Batch int
	Seed  uint64
	// Step is the finite-difference step (default 1e-5).
	Step float64
	// Symbolic, FiniteDiff and Float32 are the largest relative errors allowed, as
	// max_j |got_j − want_j| / ‖want‖: the kind against the symbolic gradient (default
	// 1e-10; also for norms and clipped sums), against finite differences (default 1e-6),
	// and the float32 binding against the symbolic gradient (default 1e-4).
	Symbolic, FiniteDiff, Float32 float64
}

func (c Config) withDefaults() Config {
	if c.Batch <= 0 {
		c.Batch = 3
	}
	if c.Step <= 0 {
		c.Step = 1e-5
	}
	if c.Symbolic <= 0 {
		c.Symbolic = 1e-10
	}
	if c.FiniteDiff <= 0 {
		c.FiniteDiff = 1e-6
	}
	if c.Float32 <= 0 {
		c.Float32 = 1e-4
	}
	return c
}

// Report is the largest relative error observed in each comparison.
type Report struct {
	// Symbolic and FiniteDiff: the kind's per-example gradients against each reference;
	// Norm: the squared norms the Workspace reports against ‖g_i‖² of the reference;
	// Clipped: the plain and clipped sums (every bound) against the reference's, and a
	// clipped example's norm against C; Float32: the float32 binding's gradients and
	// clipped sum against the reference.
	Symbolic, FiniteDiff, Norm, Clipped, Float32 float64
	// Native: the native engine's per-example gradients, norms and clipped sums against
	// the reference, in float64 (float32, on every CPU path, counts in Float32); −1 when
	// the layer has no native kernel.
	Native float64
	// InputGrad: the native engine's per-example gradients of the layer behind a fixed
	// random linear map (a Dense, or a 1×1 Conv2D for images), whose parameters' gradients
	// hold the layer's input gradient, against Gorgonia's symbolic gradient of the pair;
	// −1 when the layer has no native kernel.
	InputGrad float64
	// NumParams is the number of parameters checked per example.
	NumParams int
}

func (r Report) String() string {
	return fmt.Sprintf("%d params: symbolic %.2g, finite differences %.2g, norms %.2g, clipped sums %.2g, float32 %.2g, native %.2g, input gradient %.2g",
		r.NumParams, r.Symbolic, r.FiniteDiff, r.Norm, r.Clipped, r.Float32, r.Native, r.InputGrad)
}

// Check checks layer l's per-example gradients for per-example input shape in (see the
// package comment), reporting every mismatch through t, and returns the largest errors
// it saw. l must have parameters.
func Check(t testing.TB, l layers.Layer, in []int, cfg Config) Report {
	t.Helper()
	cfg = cfg.withDefaults()
	rep, err := check(t, l, in, cfg)
	if err != nil {
		t.Errorf("layertest: %s %v: %v", l.Kind(), in, err)
	}
	return rep
}

// problem is the data of one check: θ, x and r, and the layer's parameters.
type problem struct {
	l      layers.Layer
	in     []int
	out    []int
	specs  []layers.ParamSpec
	theta  [][]float64 // per ParamSpec, row-major
	x, r   []float64   // [B, in...], [B, out...]
	batch  int
	nParam int
}

func check(t testing.TB, l layers.Layer, in []int, cfg Config) (Report, error) {
	t.Helper()
	out, err := l.OutputShape(in)
	if err != nil {
		return Report{}, err
	}
	p := &problem{l: l, in: in, out: out, specs: l.Params(in), batch: cfg.Batch}
	if len(p.specs) == 0 {
		return Report{}, fmt.Errorf("the layer has no parameters")
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x1a7e57))
	for _, s := range p.specs {
		if prod(s.GraphShape()) != prod(s.Shape) {
			return Report{}, fmt.Errorf("%s node shape %v does not hold shape %v", s.Name, s.GraphShape(), s.Shape)
		}
		p.theta = append(p.theta, normals(rng, prod(s.Shape)))
		p.nParam += prod(s.Shape)
	}
	p.x = normals(rng, cfg.Batch*prod(in))
	p.r = normals(rng, cfg.Batch*prod(out))
	rep := Report{NumParams: p.nParam}

	// The references, example by example.
	sym := make([][]float64, cfg.Batch)
	fd := make([][]float64, cfg.Batch)
	for i := range cfg.Batch {
		if sym[i], fd[i], err = p.references(i, cfg.Step); err != nil {
			return rep, err
		}
	}
	// The kind under test, bound to the batch's tap.
	tapIn, gradZ, shapes, err := p.tap()
	if err != nil {
		return rep, err
	}
	covered := 0
	var g64 []clipping.Gradient[float64]
	var g32 []clipping.Gradient[float32]
	for l, s := range shapes {
		covered += s.NumParams()
		g64 = append(g64, clipping.Bind(s, tapIn[l], gradZ[l]))
		g32 = append(g32, clipping.Bind(s, toFloat32(tapIn[l]), toFloat32(gradZ[l])))
	}
	if covered != p.nParam {
		return rep, fmt.Errorf("the taps cover %d parameters, the layer has %d", covered, p.nParam)
	}
	ws, err := clipping.NewWorkspace(g64, cfg.Batch)
	if err != nil {
		return rep, err
	}
	got := make([]float64, p.nParam)
	for i := range cfg.Batch {
		if err := ws.PerExample(i, got); err != nil {
			return rep, err
		}
		compare(t, &rep.Symbolic, cfg.Symbolic, fmt.Sprintf("example %d gradient vs Gorgonia's symbolic gradient", i), got, sym[i])
		compare(t, &rep.FiniteDiff, cfg.FiniteDiff, fmt.Sprintf("example %d gradient vs central finite differences", i), got, fd[i])
	}
	checkSums(t, p, "", ws, sym, cfg.Symbolic, &rep)

	// The float32 binding of the same tap values.
	ws32, err := clipping.NewWorkspace(g32, cfg.Batch)
	if err != nil {
		return rep, err
	}
	for i := range cfg.Batch {
		if err := ws32.PerExample(i, got); err != nil {
			return rep, err
		}
		compare(t, &rep.Float32, cfg.Float32, fmt.Sprintf("float32 example %d gradient vs Gorgonia's symbolic gradient", i), got, sym[i])
	}
	c := 0.5 * minNorm(sym)
	sum := make([]float64, p.nParam)
	if _, err := ws32.ClippedSum(nil, clipping.Flat{C: c}, sum); err != nil {
		return rep, err
	}
	compare(t, &rep.Float32, cfg.Float32, "float32 clipped sum", sum, clippedRef(sym, nil, c))

	// The native engine's kind (its own layout: NHWC, permuted inputs, patches rebuilt
	// on demand), where the layer has a native kernel: in float64, and in float32 on every
	// CPU path this machine supports (internal/cpupath), each run after a first, different
	// batch through the same buffers and then in chunks of one row, so that a buffer
	// not cleared between calls or rows shows.
	err = p.checkStack(t, "native", p.stack(nil), sym, cfg, &rep.Native, &rep.Float32)
	if errors.Is(err, layers.ErrNotNative) {
		rep.Native, rep.InputGrad = -1, -1
		return rep, nil
	}
	if err != nil {
		return rep, err
	}

	// The layer's input gradient: the same behind a fixed random linear map, whose
	// parameters' gradients are formed from what the layer hands down.
	pre, err := p.linearMap(rng)
	if err != nil {
		return rep, err
	}
	withMap := p.stack(pre)
	ref := make([][]float64, cfg.Batch)
	for i := range cfg.Batch {
		if ref[i], err = symbolic(withMap, p.in, p.x[i*prod(p.in):(i+1)*prod(p.in)], p.r[i*prod(p.out):(i+1)*prod(p.out)]); err != nil {
			return rep, fmt.Errorf("symbolic gradient behind the linear map: %w", err)
		}
	}
	if err := p.checkStack(t, "native input gradient (behind a fixed linear map)", withMap, ref, cfg, &rep.InputGrad, &rep.Float32); err != nil {
		return rep, err
	}
	return rep, nil
}

// checkStack runs stack s natively (runNative) in float64, then in float32 on every CPU
// path this machine supports, and holds each run to the reference gradients ref (float64
// to cfg.Symbolic, into *worst64; float32 to cfg.Float32, into *worst32); what names the
// runs in failures. The first run's error (layers.ErrNotNative for a layer without a
// native kernel) is returned before anything is checked.
func (p *problem) checkStack(t testing.TB, what string, s stacked, ref [][]float64, cfg Config, worst64, worst32 *float64) error {
	t.Helper()
	ws, err := runNative[float64](s, p.in, p.batch, p.x, p.r, cfg.Seed)
	if err != nil {
		return err
	}
	checkNative(t, p, what, ws, ref, cfg.Symbolic, worst64)
	for _, path := range cpupath.Supported() {
		restore := cpupath.Force(path) // for the sums the checks take too
		ws, err := runNative[float32](s, p.in, p.batch, p.x, p.r, cfg.Seed)
		if err == nil {
			checkNative(t, p, what+" in float32 ("+path.String()+" path)", ws, ref, cfg.Float32, worst32)
		}
		restore()
		if err != nil {
			return err
		}
	}
	return nil
}

// stacked is a stack of layers with their parameters, for a native run or a symbolic
// reference.
type stacked struct {
	layers []layers.Layer
	params [][][]float64 // per layer, per ParamSpec
}

// stack is [pre…, the layer, Flatten] with the problem's θ.
func (p *problem) stack(pre *stacked) stacked {
	var s stacked
	if pre != nil {
		s.layers, s.params = append(s.layers, pre.layers...), append(s.params, pre.params...)
	}
	s.layers = append(s.layers, p.l, layers.Flatten{})
	s.params = append(s.params, p.theta, nil)
	return s
}

// linearMap is a parametrised linear layer that keeps the input shape, with random
// weights: a Dense of n units for a flat input, a 1×1 Conv2D of C filters for a CHW image.
func (p *problem) linearMap(rng *rand.Rand) (*stacked, error) {
	var l layers.Layer
	switch len(p.in) {
	case 1:
		l = layers.Dense{Units: p.in[0], NoBias: true}
	case 3:
		l = layers.Conv2D{Filters: p.in[0], Kernel: [2]int{1, 1}, NoBias: true}
	default:
		return nil, fmt.Errorf("input shape %v is neither flat nor CHW: no linear map to put below the layer", p.in)
	}
	if out, err := l.OutputShape(p.in); err != nil || !slices.Equal(out, p.in) {
		return nil, fmt.Errorf("the linear map below the layer gives %v (%v), want %v", out, err, p.in)
	}
	var ps [][]float64
	for _, s := range l.Params(p.in) {
		w := normals(rng, prod(s.Shape))
		scale := 1 / math.Sqrt(float64(p.in[0]))
		for j := range w {
			w[j] *= scale
		}
		ps = append(ps, w)
	}
	return &stacked{layers: []layers.Layer{l}, params: [][][]float64{ps}}, nil
}

// runNative runs the stack on layers.Native in T with the gradient of Σ_i ℓ_i at its
// output, twice through the same Native: first on a batch of other inputs and
// functionals drawn from seed (in chunks of Chunk rows), then on x and r in chunks of one
// row; it returns a Workspace over the taps of the second run.
func runNative[T num.Float](s stacked, in []int, batch int, x, r []float64, seed uint64) (*clipping.Workspace[T], error) {
	params := make([][][]T, len(s.params))
	for li, ps := range s.params {
		for _, v := range ps {
			params[li] = append(params[li], num.Converted[T](v))
		}
	}
	nv, err := layers.NewNative(s.layers, in, batch, params, true)
	if err != nil {
		return nil, err
	}
	nv.Prepare()
	rng := rand.New(rand.NewPCG(seed, 0x57a1e))
	staleX, staleR := normals(rng, len(x)), normals(rng, len(r))
	pass := func(x, r []float64, chunk int) {
		copy(nv.Input(), num.Converted[T](x))
		n := len(r) / batch
		for lo := 0; lo < batch; lo += chunk {
			hi := min(lo+chunk, batch)
			nv.Forward(0, lo, hi)
			y := nv.Logits()[lo*n : hi*n]
			dy := make([]T, len(y)) // ∂(Σ r⊙y + ½Σy²)/∂y = r + y (y CHW-flattened)
			for j, v := range y {
				dy[j] = T(r[lo*n+j]) + v
			}
			nv.Backward(0, lo, hi, dy)
		}
	}
	pass(staleX, staleR, nv.Chunk())
	pass(x, r, 1)
	return clipping.NewWorkspace(nv.Taps(), batch)
}

// checkNative holds a native run's per-example gradients, norms and sums to the
// reference gradients ref.
func checkNative[T num.Float](t testing.TB, p *problem, what string, ws *clipping.Workspace[T], ref [][]float64, tol float64, worst *float64) {
	t.Helper()
	got := make([]float64, ws.NumParams())
	for i := range p.batch {
		if err := ws.PerExample(i, got); err != nil {
			t.Errorf("layertest: %s: %v", what, err)
			return
		}
		compare(t, worst, tol, fmt.Sprintf("%s example %d gradient vs Gorgonia's symbolic gradient", what, i), got, ref[i])
	}
	var rep Report
	checkSums(t, p, what+": ", ws, ref, tol, &rep)
	*worst = max(*worst, rep.Norm, rep.Clipped)
}

// checkSums checks the Workspace's norms and sums against the reference gradients ref;
// prefix starts its messages.
func checkSums[T num.Float](t testing.TB, p *problem, prefix string, ws *clipping.Workspace[T], ref [][]float64, tol float64, rep *Report) {
	t.Helper()
	B := p.batch
	mask := make([]bool, B) // the last example is padding when there are several
	for i := range mask {
		mask[i] = B == 1 || i < B-1
	}
	sum := make([]float64, ws.NumParams())
	if err := ws.Sum(mask, sum); err != nil {
		t.Errorf("layertest: %sSum: %v", prefix, err)
		return
	}
	compare(t, &rep.Clipped, tol, prefix+"plain sum vs Σ_i g_i", sum, clippedRef(ref, mask, math.Inf(1)))

	cmin := minNorm(ref)
	for _, tc := range []struct {
		name string
		c    float64
	}{{"huge bound (no example clipped)", 1e30}, {"bound below every norm (all clipped)", 0.5 * cmin}, {"median bound", medianNorm(ref)}} {
		clear(sum)
		st, err := ws.ClippedSum(mask, clipping.Flat{C: tc.c}, sum)
		if err != nil {
			t.Errorf("layertest: %sClippedSum: %v", prefix, err)
			return
		}
		for i, real := range mask {
			want := 0.0
			if real {
				want = norm(ref[i])
			}
			if want == 0 {
				continue
			}
			// ‖g_i‖² as the clip factor uses it, against the reference's.
			e := math.Abs(st.Norms[i]*st.Norms[i]-want*want) / (want * want)
			rep.Norm = max(rep.Norm, e)
			if !(e <= tol) {
				t.Errorf("layertest: %s%s: example %d squared norm %.17g, the reference's %.17g (relative error %.3g > %.3g)",
					prefix, tc.name, i, st.Norms[i]*st.Norms[i], want*want, e, tol)
			}
		}
		compare(t, &rep.Clipped, tol, prefix+"clipped sum with "+tc.name+" vs Σ_i min(1, C/‖g_i‖)·g_i", sum, clippedRef(ref, mask, tc.c))
	}
	// Each example alone, clipped: its contribution has norm C exactly (up to rounding),
	// whatever the reference says, and equals (C/‖g_i‖)·g_i.
	c := 0.5 * cmin
	for i := range B {
		one := make([]bool, B)
		one[i] = true
		clear(sum)
		if _, err := ws.ClippedSum(one, clipping.Flat{C: c}, sum); err != nil {
			t.Errorf("layertest: %sClippedSum: %v", prefix, err)
			return
		}
		e := math.Abs(norm(sum)-c) / c
		rep.Clipped = max(rep.Clipped, e)
		if !(e <= tol) {
			t.Errorf("layertest: %sexample %d clipped alone to C = %.6g has norm %.17g (relative error %.3g > %.3g): the norm it was clipped by is not that of the gradient added",
				prefix, i, c, norm(sum), e, tol)
		}
		compare(t, &rep.Clipped, tol, prefix+fmt.Sprintf("example %d clipped alone vs (C/‖g_i‖)·g_i", i), sum, clippedRef(ref, one, c))
	}
}

// clippedRef is Σ_{i in mask} min(1, c/‖g_i‖)·g_i (mask nil: every example).
func clippedRef(g [][]float64, mask []bool, c float64) []float64 {
	out := make([]float64, len(g[0]))
	for i, gi := range g {
		if mask != nil && !mask[i] {
			continue
		}
		f := 1.0
		if n := norm(gi); n > c {
			f = c / n
		}
		for j, v := range gi {
			out[j] += f * v
		}
	}
	return out
}

// compare reports got against want, as max_j |got_j − want_j| / ‖want‖, into *worst.
func compare(t testing.TB, worst *float64, tol float64, what string, got, want []float64) {
	t.Helper()
	scale := norm(want)
	if scale == 0 {
		scale = 1
	}
	e, at := 0.0, 0
	for j := range want {
		d := math.Abs(got[j] - want[j])
		if math.IsNaN(got[j]) {
			d = math.Inf(1)
		}
		if d/scale > e {
			e, at = d/scale, j
		}
	}
	*worst = max(*worst, e)
	if !(e <= tol) {
		t.Errorf("layertest: %s: entry %d is %.17g, want %.17g (relative error %.3g > %.3g)", what, at, got[at], want[at], e, tol)
	}
}

// references returns example i's gradient by Gorgonia's symbolic differentiation of ℓ_i on
// a batch-of-one graph of the layer's forward fragment, and by central differences of
// the same graph's loss.
func (p *problem) references(i int, h float64) (sym, fd []float64, err error) {
	g := G.NewGraph()
	xShape := append([]int{1}, p.in...)
	xBuf := slices.Clone(p.x[i*prod(p.in) : (i+1)*prod(p.in)])
	x := G.NewTensor(g, G.Float64, len(xShape), G.WithShape(xShape...), G.WithName("layertest.x"),
		G.WithValue(tensor.New(tensor.WithShape(xShape...), tensor.WithBacking(xBuf))))
	bufs := make([][]float64, len(p.specs))
	nodes := make(G.Nodes, len(p.specs))
	for j, s := range p.specs {
		bufs[j] = slices.Clone(p.theta[j])
		gs := s.GraphShape()
		nodes[j] = G.NewTensor(g, G.Float64, len(gs), G.WithShape(gs...), G.WithName(fmt.Sprintf("layertest.param%d.%s", j, s.Name)),
			G.WithValue(tensor.New(tensor.WithShape(gs...), tensor.WithBacking(bufs[j]))))
	}
	y, _, err := p.l.Apply(x, nodes)
	if err != nil {
		return nil, nil, err
	}
	rShape := append([]int{1}, p.out...)
	if !slices.Equal([]int(y.Shape()), rShape) {
		return nil, nil, fmt.Errorf("output node shape %v, want %v", y.Shape(), rShape)
	}
	r := G.NewTensor(g, G.Float64, len(rShape), G.WithShape(rShape...), G.WithName("layertest.r"),
		G.WithValue(tensor.New(tensor.WithShape(rShape...), tensor.WithBacking(slices.Clone(p.r[i*prod(p.out):(i+1)*prod(p.out)])))))
	loss, err := lossOf(g, y, r)
	if err != nil {
		return nil, nil, err
	}
	grads, err := G.Grad(loss, nodes...)
	if err != nil {
		return nil, nil, fmt.Errorf("symbolic gradient: %w", err)
	}
	gbufs := make([][]float64, len(nodes))
	for j := range grads {
		gbufs[j] = make([]float64, len(bufs[j]))
		readInto(grads[j], gbufs[j])
	}
	var lv G.Value
	G.Read(loss, &lv)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	x0 := slices.Clone(xBuf)
	// run runs the graph at θ with entry k of parameter j moved by d. The inputs are
	// restored first: a fragment's ops may work in place on their inputs' values
	// (GroupNorm's do), so a run must not see what the previous one left.
	run := func(j, k int, d float64) (float64, error) {
		copy(xBuf, x0)
		for q := range bufs {
			copy(bufs[q], p.theta[q])
		}
		if j >= 0 {
			bufs[j][k] += d
		}
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			return 0, err
		}
		v, ok := lv.Data().(float64)
		if !ok {
			return 0, fmt.Errorf("loss value %v is not a float64 scalar", lv)
		}
		return v, nil
	}
	if _, err := run(-1, 0, 0); err != nil {
		return nil, nil, fmt.Errorf("running the batch-of-one graph: %w", err)
	}
	for _, b := range gbufs {
		sym = append(sym, b...)
	}
	sym = slices.Clone(sym)
	for j := range bufs {
		for k := range bufs[j] {
			up, err := run(j, k, h)
			if err != nil {
				return nil, nil, err
			}
			down, err := run(j, k, -h)
			if err != nil {
				return nil, nil, err
			}
			fd = append(fd, (up-down)/(2*h))
		}
	}
	return sym, fd, nil
}

// symbolic is Gorgonia's symbolic gradient of one example's loss Σ r⊙y + ½Σy² with
// respect to every parameter of the stack (layer order, then ParamSpec order), from a
// batch-of-one graph of the layers' forward fragments.
func symbolic(s stacked, in []int, x, r []float64) ([]float64, error) {
	g := G.NewGraph()
	shape := append([]int{1}, in...)
	h := G.NewTensor(g, G.Float64, len(shape), G.WithShape(shape...), G.WithName("layertest.x"),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(slices.Clone(x)))))
	cur := in
	var nodes G.Nodes
	var bufs [][]float64
	for li, l := range s.layers {
		specs := l.Params(cur)
		if len(specs) != len(s.params[li]) {
			return nil, fmt.Errorf("layer %d (%s) has %d parameters, %d given", li, l.Kind(), len(specs), len(s.params[li]))
		}
		var ln G.Nodes
		for j, sp := range specs {
			gs := sp.GraphShape()
			n := G.NewTensor(g, G.Float64, len(gs), G.WithShape(gs...), G.WithName(fmt.Sprintf("layertest.layer%d.param%d.%s", li, j, sp.Name)),
				G.WithValue(tensor.New(tensor.WithShape(gs...), tensor.WithBacking(slices.Clone(s.params[li][j])))))
			ln = append(ln, n)
			bufs = append(bufs, make([]float64, prod(sp.Shape)))
		}
		nodes = append(nodes, ln...)
		var err error
		if h, _, err = l.Apply(h, ln); err != nil {
			return nil, fmt.Errorf("layer %d (%s): %w", li, l.Kind(), err)
		}
		if cur, err = l.OutputShape(cur); err != nil {
			return nil, err
		}
	}
	if want := prod(cur); prod(h.Shape()) != want || len(r) != want {
		return nil, fmt.Errorf("output node shape %v, %d functional values, want %d", h.Shape(), len(r), want)
	}
	rn := G.NewTensor(g, G.Float64, h.Shape().Dims(), G.WithShape(h.Shape().Clone()...), G.WithName("layertest.r"),
		G.WithValue(tensor.New(tensor.WithShape(h.Shape().Clone()...), tensor.WithBacking(slices.Clone(r)))))
	loss, err := lossOf(g, h, rn)
	if err != nil {
		return nil, err
	}
	grads, err := G.Grad(loss, nodes...)
	if err != nil {
		return nil, fmt.Errorf("symbolic gradient: %w", err)
	}
	for j := range grads {
		readInto(grads[j], bufs[j])
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, err
	}
	var out []float64
	for _, b := range bufs {
		out = append(out, b...)
	}
	return out, nil
}

// tap runs the layer on the whole batch with the summed loss Σ_i ℓ_i, as an engine does,
// and returns for each of the tap's leaves (one, or a composite layer's nested taps) its
// In value (read from a forward-only graph, as nn's Gorgonia engine reads it), the
// gradient of the summed loss at its Z, and its Shape.
func (p *problem) tap() (in, gradZ [][]float64, shapes []clipping.Shape, err error) {
	build := func(backward bool) (*G.ExprGraph, []*layers.Tap, *G.Node, G.Nodes, error) {
		g := G.NewGraph()
		xShape := append([]int{p.batch}, p.in...)
		x := G.NewTensor(g, G.Float64, len(xShape), G.WithShape(xShape...), G.WithName("layertest.x"),
			G.WithValue(tensor.New(tensor.WithShape(xShape...), tensor.WithBacking(slices.Clone(p.x)))))
		nodes := make(G.Nodes, len(p.specs))
		for j, s := range p.specs {
			gs := s.GraphShape()
			nodes[j] = G.NewTensor(g, G.Float64, len(gs), G.WithShape(gs...), G.WithName(fmt.Sprintf("layertest.param%d.%s", j, s.Name)),
				G.WithValue(tensor.New(tensor.WithShape(gs...), tensor.WithBacking(slices.Clone(p.theta[j])))))
		}
		y, tap, err := p.l.Apply(x, nodes)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		leaves := tap.Leaves()
		if len(leaves) == 0 {
			return nil, nil, nil, nil, fmt.Errorf("the layer has parameters but its Apply returns no tap")
		}
		zs := make(G.Nodes, len(leaves))
		for l, t := range leaves {
			if t.Shape == nil || t.In == nil || t.Z == nil {
				return nil, nil, nil, nil, fmt.Errorf("the layer has parameters but its Apply returns an incomplete tap (leaf %d)", l)
			}
			zs[l] = t.Z
		}
		rShape := append([]int{p.batch}, p.out...)
		r := G.NewTensor(g, G.Float64, len(rShape), G.WithShape(rShape...), G.WithName("layertest.r"),
			G.WithValue(tensor.New(tensor.WithShape(rShape...), tensor.WithBacking(slices.Clone(p.r)))))
		loss, err := lossOf(g, y, r)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		var grads G.Nodes
		if backward {
			one := g.AddNode(G.NewConstant(1.0))
			if grads, err = G.Backpropagate(G.Nodes{loss}, G.Nodes{one}, zs); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("backpropagation: %w", err)
			}
		}
		return g, leaves, x, grads, nil
	}
	runGraph := func(g *G.ExprGraph) error {
		vm := G.NewTapeMachine(g)
		defer vm.Close()
		return vm.RunAll()
	}

	g, leaves, x, _, err := build(false)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, tp := range leaves {
		buf := make([]float64, prod(tp.In.Shape()))
		if tp.In == x {
			copy(buf, p.x)
		} else {
			readInto(tp.In, buf)
		}
		in = append(in, buf)
		shapes = append(shapes, tp.Shape)
	}
	if err := runGraph(g); err != nil {
		return nil, nil, nil, fmt.Errorf("running the batch graph: %w", err)
	}
	g, _, _, grads, err := build(true)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, gr := range grads {
		buf := make([]float64, prod(gr.Shape()))
		readInto(gr, buf)
		gradZ = append(gradZ, buf)
	}
	if err := runGraph(g); err != nil {
		return nil, nil, nil, fmt.Errorf("running the batch graph backward: %w", err)
	}
	return in, gradZ, shapes, nil
}

// lossOf is Σ r ⊙ y + ½ Σ y².
func lossOf(g *G.ExprGraph, y, r *G.Node) (*G.Node, error) {
	lin, err := G.HadamardProd(y, r)
	if err != nil {
		return nil, err
	}
	sq, err := G.Square(y)
	if err != nil {
		return nil, err
	}
	half := g.AddNode(G.NewConstant(0.5))
	hsq, err := G.Mul(half, sq)
	if err != nil {
		return nil, err
	}
	all, err := G.Add(lin, hsq)
	if err != nil {
		return nil, err
	}
	return G.Sum(all)
}

// readInto makes the graph copy node's value into buf when it runs (as nn's engine reads
// taps: through the graph, so the value is live when copied).
func readInto(node *G.Node, buf []float64) {
	v := new(G.Value)
	*v = tensor.New(tensor.WithShape(node.Shape().Clone()...), tensor.WithBacking(buf))
	G.Read(node, v)
}

func normals(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for j := range v {
		v[j] = rng.NormFloat64()
	}
	return v
}

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

func norm(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

func minNorm(g [][]float64) float64 {
	m := math.Inf(1)
	for _, gi := range g {
		m = min(m, norm(gi))
	}
	return m
}

func medianNorm(g [][]float64) float64 {
	ns := make([]float64, len(g))
	for i, gi := range g {
		ns[i] = norm(gi)
	}
	slices.Sort(ns)
	return ns[len(ns)/2]
}

func toFloat32(x []float64) []float32 {
	out := make([]float32, len(x))
	for j, v := range x {
		out[j] = float32(v)
	}
	return out
}
