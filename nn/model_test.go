package nn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/layers"
)

func assertClose(t *testing.T, what string, got, want []float64, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var scale float64
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	for j := range got {
		if math.Abs(got[j]-want[j]) > rel*scale || math.IsNaN(got[j]) {
			t.Fatalf("%s[%d] = %v, want %v", what, j, got[j], want[j])
		}
	}
}

func randomInputs(rng *rand.Rand, spec Spec, batch int) ([]float32, []int) {
	x := make([]float32, batch*num.Prod(spec.InputShape))
	for i := range x {
		x[i] = rng.Float32()
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = rng.IntN(spec.NumClasses)
	}
	return x, labels
}

// newSoftmaxRegression is 5 inputs → 3 classes in float64, with random biases.
func newSoftmaxRegression(t *testing.T, batch int, opts ...Option) (*Model, Spec) {
	t.Helper()
	spec := Spec{Name: "softmax", InputShape: []int{5}, NumClasses: 3, Layers: []layers.Layer{layers.Dense{Units: 3}}}
	m, err := New(spec, batch, append([]Option{WithDType(Float64), WithSeed(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, m.NumParams())
	m.Params(p)
	for j := 15; j < 18; j++ {
		p[j] = float64(j-16) / 4
	}
	if err := m.SetParams(p); err != nil {
		t.Fatal(err)
	}
	return m, spec
}

// softmaxRegressionGradient is the closed form for z = xW + b, W [n, k]: the loss
// −Σ_i log softmax(z_i)_{y_i} and its gradient Σ_i x_i (p_i − e_{y_i})ᵀ, Σ_i (p_i − e_{y_i}).
func softmaxRegressionGradient(p []float64, x []float32, labels []int, n, k int) (float64, []float64) {
	grad := make([]float64, n*k+k)
	var loss float64
	for i, y := range labels {
		z := make([]float64, k)
		var s float64
		for o := range k {
			z[o] = p[n*k+o]
			for a := range n {
				z[o] += float64(x[i*n+a]) * p[a*k+o]
			}
			s += math.Exp(z[o])
		}
		loss -= math.Log(math.Exp(z[y]) / s)
		for o := range k {
			d := math.Exp(z[o]) / s
			if o == y {
				d--
			}
			grad[n*k+o] += d
			for a := range n {
				grad[a*k+o] += float64(x[i*n+a]) * d
			}
		}
	}
	return loss, grad
}

func TestGradientMatchesClosedForm(t *testing.T) {
	m, spec := newSoftmaxRegression(t, 6)
	x, labels := randomInputs(rand.New(rand.NewPCG(5, 6)), spec, 6)
	p := make([]float64, m.NumParams())
	m.Params(p)
	wantLoss, want := softmaxRegressionGradient(p, x, labels, 5, 3)
	got := make([]float64, m.NumParams())
	st, err := m.Gradient(Batch{X: x, Labels: labels}, got)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "gradient", got, want, 1e-13)
	if math.Abs(st.Loss-wantLoss) > 1e-13*wantLoss || st.Examples != 6 {
		t.Fatalf("loss %v examples %d, want %v and 6", st.Loss, st.Examples, wantLoss)
	}
	for i := range 6 {
		g := make([]float64, m.NumParams())
		if err := m.PerExampleGradient(i, g); err != nil {
			t.Fatal(err)
		}
		_, w := softmaxRegressionGradient(p, x[i*5:(i+1)*5], labels[i:i+1], 5, 3)
		assertClose(t, "per-example gradient", g, w, 1e-13)
	}
}

// tinyCNN has every layer kind: conv with bias, tanh, max-pool, flatten, dense.
func tinyCNN() Spec {
	return Spec{Name: "tiny", InputShape: []int{2, 6, 6}, NumClasses: 4, Layers: []layers.Layer{
		layers.Conv2D{Filters: 3, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}},
		layers.Tanh{},
		layers.MaxPool2D{Kernel: [2]int{2, 2}},
		layers.Flatten{},
		layers.Dense{Units: 4},
	}}
}

// TestGradientMatchesFiniteDifferences differentiates the tiny CNN's summed loss by
// central differences of Evaluate, independently of any autodiff.
func TestGradientMatchesFiniteDifferences(t *testing.T) {
	const B = 3
	spec := tinyCNN()
	m, err := New(spec, B, WithDType(Float64), WithSeed(2))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	p := make([]float64, m.NumParams())
	m.Params(p)
	for j := range p {
		p[j] += 0.1 * rng.NormFloat64()
	}
	if err := m.SetParams(p); err != nil {
		t.Fatal(err)
	}
	x, labels := randomInputs(rng, spec, B)
	mask := []bool{true, false, true}
	b := Batch{X: x, Labels: labels, Mask: mask}
	grad := make([]float64, m.NumParams())
	if _, err := m.Gradient(b, grad); err != nil {
		t.Fatal(err)
	}
	const h = 1e-5
	fd := make([]float64, len(p))
	for j := range p {
		q := slices.Clone(p)
		q[j] = p[j] + h
		if err := m.SetParams(q); err != nil {
			t.Fatal(err)
		}
		lp, _, err := m.Evaluate(b)
		if err != nil {
			t.Fatal(err)
		}
		q[j] = p[j] - h
		if err := m.SetParams(q); err != nil {
			t.Fatal(err)
		}
		lm, _, err := m.Evaluate(b)
		if err != nil {
			t.Fatal(err)
		}
		fd[j] = (lp - lm) / (2 * h)
	}
	assertClose(t, "gradient vs central differences", grad, fd, 1e-6)
}

func TestLayoutAndParams(t *testing.T) {
	m, err := New(tinyCNN(), 2, WithSeed(3))
	if err != nil {
		t.Fatal(err)
	}
	want := []ParamInfo{
		{Name: "conv1.weight", Shape: []int{3, 2, 3, 3}}, {Name: "conv1.bias", Shape: []int{3}},
		{Name: "dense1.weight", Shape: []int{27, 4}}, {Name: "dense1.bias", Shape: []int{4}},
	}
	got := m.Layout()
	if len(got) != len(want) {
		t.Fatalf("layout %v", got)
	}
	total := 0
	for i := range want {
		if got[i].Name != want[i].Name || !slices.Equal(got[i].Shape, want[i].Shape) {
			t.Errorf("layout[%d] = %v, want %v", i, got[i], want[i])
		}
		total += want[i].Size()
	}
	if m.NumParams() != total || total != 3*2*9+3+27*4+4 {
		t.Errorf("NumParams %d, want %d", m.NumParams(), total)
	}
	if g := m.ParamLayers(); !slices.Equal(g, []string{"conv1", "dense1"}) {
		t.Errorf("ParamLayers %v", g)
	}
	if m.DType() != Float32 || m.BatchSize() != 2 || m.NumClasses() != 4 || !slices.Equal(m.InputShape(), []int{2, 6, 6}) {
		t.Errorf("accessors: %v %d %d %v", m.DType(), m.BatchSize(), m.NumClasses(), m.InputShape())
	}

	// Initialisation: Glorot-uniform weights within ±sqrt(6/(fanIn+fanOut)), zero biases,
	// reproducible from the seed.
	p := make([]float64, m.NumParams())
	m.Params(p)
	limits := []float64{math.Sqrt(6.0 / (18 + 27)), 0, math.Sqrt(6.0 / (27 + 4)), 0}
	off := 0
	for i, info := range got {
		for _, v := range p[off : off+info.Size()] {
			if math.Abs(v) > limits[i] || (limits[i] == 0 && v != 0) {
				t.Fatalf("%s value %v outside ±%v", info.Name, v, limits[i])
			}
		}
		off += info.Size()
	}
	again, _ := New(tinyCNN(), 5, WithSeed(3))
	other, _ := New(tinyCNN(), 2, WithSeed(4))
	pa, po := make([]float64, len(p)), make([]float64, len(p))
	again.Params(pa)
	other.Params(po)
	if !slices.Equal(p, pa) {
		t.Error("same seed gave different parameters")
	}
	if slices.Equal(p, po) {
		t.Error("different seeds gave the same parameters")
	}

	// Round trip: exact in float64, rounded to float32 in a float32 model.
	src := make([]float64, len(p))
	for j := range src {
		src[j] = 0.1 + float64(j)/3
	}
	for _, dt := range []DType{Float32, Float64} {
		mm, _ := New(tinyCNN(), 1, WithDType(dt))
		if err := mm.SetParams(src); err != nil {
			t.Fatal(err)
		}
		back := make([]float64, len(src))
		mm.Params(back)
		for j := range src {
			want := src[j]
			if dt == Float32 {
				want = float64(float32(want))
			}
			if back[j] != want {
				t.Fatalf("%v: Params[%d] = %v after SetParams(%v)", dt, j, back[j], src[j])
			}
		}
	}
}

func TestSetParamsErrors(t *testing.T) {
	m, _ := New(tinyCNN(), 1)
	d := m.NumParams()
	bad := func(j int, v float64) []float64 {
		p := make([]float64, d)
		p[j] = v
		return p
	}
	for name, src := range map[string][]float64{
		"short":            make([]float64, d-1),
		"long":             make([]float64, d+1),
		"NaN":              bad(3, math.NaN()),
		"Inf":              bad(d-1, math.Inf(-1)),
		"float32 overflow": bad(0, 1e39),
	} {
		if err := m.SetParams(src); !errors.Is(err, ErrParams) {
			t.Errorf("%s: error %v, want ErrParams", name, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Params into a short slice did not panic")
		}
	}()
	m.Params(make([]float64, d-1))
}

func TestBatchErrors(t *testing.T) {
	const B = 2
	m, _ := New(tinyCNN(), B)
	x, labels := randomInputs(rand.New(rand.NewPCG(1, 1)), tinyCNN(), B)
	nan := slices.Clone(x)
	nan[5] = float32(math.NaN())
	grad := make([]float64, m.NumParams())
	for name, b := range map[string]Batch{
		"short input":     {X: x[1:], Labels: labels},
		"labels length":   {X: x, Labels: labels[:1]},
		"no labels":       {X: x},
		"mask length":     {X: x, Labels: labels, Mask: []bool{true}},
		"label too large": {X: x, Labels: []int{0, 4}},
		"negative label":  {X: x, Labels: []int{-1, 0}},
		"NaN input":       {X: nan, Labels: labels},
	} {
		if _, err := m.Gradient(b, grad); !errors.Is(err, ErrBatch) {
			t.Errorf("Gradient %s: error %v, want ErrBatch", name, err)
		}
		if _, err := m.ClippedGradient(b, clipping.Flat{C: 1}, grad); !errors.Is(err, ErrBatch) {
			t.Errorf("ClippedGradient %s: error %v, want ErrBatch", name, err)
		}
		if _, _, err := m.Evaluate(b); !errors.Is(err, ErrBatch) {
			t.Errorf("Evaluate %s: error %v, want ErrBatch", name, err)
		}
	}
	// Padding rows are not validated: they are never read.
	nanPad := slices.Clone(x)
	nanPad[len(x)-1] = float32(math.Inf(1))
	if _, err := m.Gradient(Batch{X: nanPad, Labels: []int{0, 99}, Mask: []bool{true, false}}, grad); err != nil {
		t.Errorf("Inf and bad label in a padding row: %v", err)
	}
	for j := range grad {
		if grad[j] != 0 {
			break
		}
		if j == len(grad)-1 {
			t.Error("masked step added nothing")
		}
	}
	if _, err := m.ClippedGradient(Batch{X: x, Labels: labels}, clipping.Flat{C: -1}, grad); !errors.Is(err, clipping.ErrRule) {
		t.Errorf("negative C: error %v, want ErrRule", err)
	}
	if _, err := m.ClippedGradient(Batch{X: x, Labels: labels}, nil, grad); !errors.Is(err, clipping.ErrRule) {
		t.Errorf("nil rule: error %v, want ErrRule", err)
	}
	if _, err := m.ClippedGradient(Batch{X: x, Labels: labels}, clipping.PerLayer{C: []float64{1}}, grad); !errors.Is(err, clipping.ErrRule) {
		t.Errorf("one threshold for two layers: error %v, want ErrRule", err)
	}
	if _, err := m.Gradient(Batch{X: x, Labels: labels}, grad[1:]); !errors.Is(err, clipping.ErrShape) {
		t.Errorf("short gradient buffer: error %v, want ErrShape", err)
	}
	if err := m.Predict(x, make([]int, B+1)); !errors.Is(err, ErrBatch) {
		t.Errorf("Predict into %d slots: %v", B+1, err)
	}
	fresh, _ := New(tinyCNN(), B)
	if err := fresh.PerExampleGradient(0, grad); err == nil {
		t.Error("PerExampleGradient before a step: no error")
	}
}

// TestPaddingRowsDoNotMatter fills the padding rows with different data and labels: loss,
// correct count, gradient and clipped gradient are bit-for-bit the same. The float32
// native engine reads the rows where they are (layers.Native.ReadInput), so its padding
// rows also hold NaN, ±Inf and the largest float32 once; the float64 one copies them.
func TestPaddingRowsDoNotMatter(t *testing.T) {
	const B = 5
	mlp := Spec{Name: "mlp", InputShape: []int{3, 4}, NumClasses: 3, Layers: []layers.Layer{
		layers.Flatten{}, layers.Dense{Units: 5}, layers.ReLU{}, layers.Dense{Units: 3}}}
	for _, tc := range []struct {
		spec    Spec
		dtype   DType
		hostile bool
	}{{tinyCNN(), Float32, false}, {tinyCNN(), Float32, true}, {mlp, Float32, true}, {tinyCNN(), Float64, false}} {
		t.Run(fmt.Sprintf("%s/%v/hostile=%v", tc.spec.Name, tc.dtype, tc.hostile), func(t *testing.T) {
			testPaddingRows(t, tc.spec, tc.dtype, tc.hostile, B)
		})
	}
}

func testPaddingRows(t *testing.T, spec Spec, dtype DType, hostile bool, B int) {
	m, err := New(spec, B, WithSeed(5), WithDType(dtype))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	x1, l1 := randomInputs(rng, spec, B)
	x2, l2 := randomInputs(rng, spec, B)
	mask := []bool{false, true, true, false, true}
	ex := num.Prod(spec.InputShape)
	for i, real := range mask {
		if real {
			copy(x2[i*ex:(i+1)*ex], x1[i*ex:(i+1)*ex])
			l2[i] = l1[i]
		} else if hostile {
			for j := range ex {
				x2[i*ex+j] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
					math.MaxFloat32, -math.MaxFloat32}[(i+j)%5]
			}
			l2[i] = -7
		}
	}
	step := func(x []float32, l []int) (StepStats, []float64, StepStats, []float64, float64) {
		g := make([]float64, m.NumParams())
		st, err := m.Gradient(Batch{X: x, Labels: l, Mask: mask}, g)
		if err != nil {
			t.Fatal(err)
		}
		c := make([]float64, m.NumParams())
		cst, err := m.ClippedGradient(Batch{X: x, Labels: l, Mask: mask}, clipping.PerLayerEqual(0.05, 2), c)
		if err != nil {
			t.Fatal(err)
		}
		cst.Stats = clipping.Stats{Norms: slices.Clone(cst.Norms), Clipped: cst.Clipped}
		loss, _, err := m.Evaluate(Batch{X: x, Labels: l, Mask: mask})
		if err != nil {
			t.Fatal(err)
		}
		return st, g, cst, c, loss
	}
	s1, g1, c1, cg1, e1 := step(x1, l1)
	s2, g2, c2, cg2, e2 := step(x2, l2)
	if s1.Loss != s2.Loss || s1.Correct != s2.Correct || s1.Examples != 3 || e1 != e2 || e1 != s1.Loss {
		t.Errorf("stats %+v vs %+v, eval loss %v vs %v", s1, s2, e1, e2)
	}
	if !slices.Equal(g1, g2) || !slices.Equal(cg1, cg2) || !slices.Equal(c1.Norms, c2.Norms) {
		t.Error("padding rows changed the gradient")
	}
	for i, real := range mask {
		if !real && c1.Norms[i] != 0 {
			t.Errorf("padding row %d norm %v", i, c1.Norms[i])
		}
	}
}

// TestEvaluateAndPredict checks the evaluation graph against the training graph and the
// prediction against the arg-max of the closed-form logits, and that both graphs follow
// SetParams (they share the parameter memory) while steps leave parameters unchanged.
func TestEvaluateAndPredict(t *testing.T) {
	const B = 6
	m, spec := newSoftmaxRegression(t, B)
	rng := rand.New(rand.NewPCG(11, 12))
	x, labels := randomInputs(rng, spec, B)
	mask := []bool{true, true, true, true, false, false}
	before := make([]float64, m.NumParams())
	m.Params(before)
	for round := range 2 {
		p := make([]float64, m.NumParams())
		m.Params(p)
		g := make([]float64, m.NumParams())
		st, err := m.ClippedGradient(Batch{X: x, Labels: labels, Mask: mask}, clipping.Flat{C: 1}, g)
		if err != nil {
			t.Fatal(err)
		}
		loss, correct, err := m.Evaluate(Batch{X: x, Labels: labels, Mask: mask})
		if err != nil {
			t.Fatal(err)
		}
		wantLoss, _ := softmaxRegressionGradient(p, x[:4*5], labels[:4], 5, 3)
		if math.Abs(loss-wantLoss) > 1e-13*wantLoss || math.Abs(st.Loss-wantLoss) > 1e-13*wantLoss {
			t.Errorf("round %d: Evaluate loss %v, step loss %v, closed form %v", round, loss, st.Loss, wantLoss)
		}
		pred := make([]int, B)
		if err := m.Predict(x, pred); err != nil {
			t.Fatal(err)
		}
		wantCorrect := 0
		for i := range B {
			best, bestZ := 0, math.Inf(-1)
			for o := range 3 {
				z := p[15+o]
				for a := range 5 {
					z += float64(x[i*5+a]) * p[a*3+o]
				}
				if z > bestZ {
					best, bestZ = o, z
				}
			}
			if pred[i] != best {
				t.Errorf("round %d: prediction %d = %d, want %d", round, i, pred[i], best)
			}
			if mask[i] && best == labels[i] {
				wantCorrect++
			}
		}
		if correct != wantCorrect || st.Correct != wantCorrect {
			t.Errorf("round %d: correct %d (step %d), want %d", round, correct, st.Correct, wantCorrect)
		}
		after := make([]float64, m.NumParams())
		m.Params(after)
		if !slices.Equal(after, p) {
			t.Fatal("a step changed the parameters")
		}
		for j := range p {
			p[j] = p[j]*2 + 0.3
		}
		if err := m.SetParams(p); err != nil {
			t.Fatal(err)
		}
	}
}

// opaque has parameters but no tap: its per-example gradients could not be clipped.
type opaque struct{ layers.Dense }

func (o opaque) Apply(x *G.Node, p []*G.Node) (*G.Node, *layers.Tap, error) {
	y, _, err := o.Dense.Apply(x, p)
	return y, nil, err
}

func TestSpecErrors(t *testing.T) {
	for name, spec := range map[string]Spec{
		"wrong logits":   {InputShape: []int{4}, NumClasses: 3, Layers: []layers.Layer{layers.Dense{Units: 2}}},
		"one class":      {InputShape: []int{4}, NumClasses: 1, Layers: []layers.Layer{layers.Dense{Units: 1}}},
		"no layers":      {InputShape: []int{4}, NumClasses: 2},
		"no parameters":  {InputShape: []int{2}, NumClasses: 2, Layers: []layers.Layer{layers.ReLU{}}},
		"image to dense": {InputShape: []int{1, 4, 4}, NumClasses: 2, Layers: []layers.Layer{layers.Dense{Units: 2}}},
		"bad input":      {InputShape: []int{0, 4}, NumClasses: 2, Layers: []layers.Layer{layers.Dense{Units: 2}}},
		"nil layer":      {InputShape: []int{4}, NumClasses: 2, Layers: []layers.Layer{nil}},
		"no tap":         {InputShape: []int{4}, NumClasses: 2, Layers: []layers.Layer{opaque{layers.Dense{Units: 2}}}},
	} {
		if _, err := New(spec, 2); !errors.Is(err, ErrSpec) {
			t.Errorf("%s: error %v, want ErrSpec", name, err)
		}
	}
	if _, err := New(tinyCNN(), 0); !errors.Is(err, ErrSpec) {
		t.Errorf("batch 0: %v", err)
	}
	// A batch whose activations cannot be addressed is an error, not a makeslice panic
	// (issue 23 item 4).
	for _, b := range []int{1 << 60, math.MaxInt} {
		if _, err := New(tinyCNN(), b); !errors.Is(err, ErrSpec) {
			t.Errorf("batch %d: %v", b, err)
		}
	}
	if _, err := New(tinyCNN(), 1, WithDType(DType(5))); !errors.Is(err, ErrSpec) {
		t.Errorf("bad dtype: %v", err)
	}
}

// A value outside the enum names itself.
func TestDTypeString(t *testing.T) {
	for d, want := range map[DType]string{Float32: "float32", Float64: "float64", 2: "DType(2)", -1: "DType(-1)"} {
		if got := d.String(); got != want {
			t.Errorf("DType(%d).String() = %q, want %q", int(d), got, want)
		}
	}
}
