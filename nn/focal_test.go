package nn

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/clipping"
)

var focalGammas = []float64{0, 0.5, 1, 2, 3.5}

// focalOracle is the focal loss −(1 − p_y)^γ·log p_y written independently of labelFocal:
// its own softmax shifted by the row maximum, 1 − p_y summed over the other classes
// (no 1 − p cancellation, no expm1), and −log p_y as log1p of the others' mass relative to
// z_y when z_y is the largest logit.
func focalOracle(z []float64, y int, gamma float64) float64 {
	m := z[0]
	for _, v := range z {
		m = math.Max(m, v)
	}
	var total, others float64
	for k, v := range z {
		e := math.Exp(v - m)
		total += e
		if k != y {
			others += e
		}
	}
	q := others / total
	nlp := math.Log(total) - (z[y] - m)
	if z[y] == m {
		var rel float64 // Σ_{k≠y} exp(z_k − z_y)
		for k, v := range z {
			if k != y {
				rel += math.Exp(v - z[y])
			}
		}
		nlp = math.Log1p(rel)
	}
	return math.Pow(q, gamma) * nlp
}

// focalRows are logits with p_y moderate, p_y ≈ 1 (ℓ ≈ 1e-9) and p_y ≈ 0.
var focalRows = []struct {
	z []float64
	y int
}{
	{[]float64{0.3, -1.2, 2.1, 0.7}, 1},
	{[]float64{0.3, -1.2, 2.1, 0.7}, 2},
	{[]float64{22, 0, -3, 1}, 0},
	{[]float64{-30, 5, 0, 2}, 0},
	{[]float64{-4, 2.5, 1, 3}, 3},
}

// TestFocalLossClosedForm holds labelFocal's value to the oracle and its gradient to
// central differences of the oracle, and to w·(softmax − e_y) with
// w = (1−p)^γ − γ(1−p)^(γ−1)·p·log p evaluated directly, for every γ of focalGammas.
func TestFocalLossClosedForm(t *testing.T) {
	for _, gamma := range focalGammas {
		for _, r := range focalRows {
			want := focalOracle(r.z, r.y, gamma)
			dz := make([]float64, len(r.z))
			var got float64
			if gamma == 0 {
				got = labelCrossEntropy(r.z, r.y, dz)
			} else {
				got = labelFocal(r.z, r.y, gamma, dz)
			}
			tol := 1e-13 * want
			if gamma == 0 {
				// The cross-entropy's lse − z_y rounds log(1 + r) at 1: absolute 1e-16
				// where ℓ ≈ 1e-9 (the focal loss keeps relative precision there).
				tol += 1e-15
			}
			if math.Abs(got-want) > tol {
				t.Errorf("γ=%v z=%v y=%d: loss %v, oracle %v", gamma, r.z, r.y, got, want)
			}
			var scale float64
			for _, g := range dz {
				scale = math.Max(scale, math.Abs(g))
			}
			const h = 1e-5
			for j := range r.z {
				zp := append([]float64(nil), r.z...)
				zm := append([]float64(nil), r.z...)
				zp[j] += h
				zm[j] -= h
				fd := (focalOracle(zp, r.y, gamma) - focalOracle(zm, r.y, gamma)) / (2 * h)
				if math.Abs(fd-dz[j]) > 1e-8*scale+tol || math.IsNaN(dz[j]) {
					t.Errorf("γ=%v z=%v y=%d: ∂L/∂z[%d] = %v, central difference %v", gamma, r.z, r.y, j, dz[j], fd)
				}
			}
			// The closed form of the issue, from a plain softmax (moderate rows only:
			// at p ≈ 1 its 1 − p cancels).
			if r.z[0] == 22 {
				continue
			}
			var s float64
			for _, v := range r.z {
				s += math.Exp(v)
			}
			p := math.Exp(r.z[r.y]) / s
			w := math.Pow(1-p, gamma) - gamma*math.Pow(1-p, gamma-1)*p*math.Log(p)
			for j, v := range r.z {
				d := math.Exp(v) / s
				if j == r.y {
					d--
				}
				if math.Abs(w*d-dz[j]) > 1e-12*scale {
					t.Errorf("γ=%v z=%v y=%d: ∂L/∂z[%d] = %v, w·d = %v", gamma, r.z, r.y, j, dz[j], w*d)
				}
			}
		}
	}
}

// TestFocalHugeLogits: logits ±1e4 overflow any plain softmax. With z = (1e4, −1e4, 0) and
// y = 0, p_y = 1 in float64: the loss is 0 and so is the gradient for γ > 0 (w = 0), while
// γ < 1 has (1 − p)^(γ−1) = ∞. With y = 1, p_y = e^(−2e4) = 0: the loss is (1 − 0)^γ·2e4 and
// the gradient is the cross-entropy's, softmax − e_y = (1, −1, 0).
func TestFocalHugeLogits(t *testing.T) {
	z := []float64{1e4, -1e4, 0}
	z32 := []float32{1e4, -1e4, 0}
	for _, gamma := range focalGammas[1:] {
		dz := make([]float64, 3)
		if l := labelFocal(z, 0, gamma, dz); l != 0 || dz[0] != 0 || dz[1] != 0 || dz[2] != 0 {
			t.Errorf("γ=%v y=0: loss %v, gradient %v, want 0 and zeros", gamma, l, dz)
		}
		if l := labelFocal(z, 1, gamma, dz); l != 2e4 || dz[0] != 1 || dz[1] != -1 || dz[2] != 0 {
			t.Errorf("γ=%v y=1: loss %v, gradient %v, want 2e4 and (1, −1, 0)", gamma, l, dz)
		}
		d32 := make([]float32, 3)
		if l := labelFocal(z32, 1, gamma, d32); l != 2e4 || d32[0] != 1 || d32[1] != -1 || d32[2] != 0 {
			t.Errorf("float32 γ=%v y=1: loss %v, gradient %v, want 2e4 and (1, −1, 0)", gamma, l, d32)
		}
		if l := labelFocal(z32, 2, gamma, d32); math.Abs(l-1e4) > 1e-12 || d32[0] != 1 || d32[1] != 0 || d32[2] != -1 {
			t.Errorf("float32 γ=%v y=2: loss %v, gradient %v, want 1e4 and (1, 0, −1)", gamma, l, d32)
		}
	}
}

// TestFocalMatchesPyTorch compares with PyTorch 2 (float64 autograd), computed once with
// /usr/bin/python3:
//
//	import torch
//	rows = [([1.0, -0.5, 2.0, 0.25], 0), ([3.0, 1.0, -2.0, 0.5], 0),
//	        ([0.1, 0.2, 0.3, 4.0], 2), ([12.0, -3.0, 0.0, 1.0], 0)]
//	for gamma in [0.5, 1.0, 2.0, 3.5]:
//	    for z, y in rows:
//	        zt = torch.tensor(z, dtype=torch.float64, requires_grad=True)
//	        logp = torch.log_softmax(zt, 0)[y]
//	        loss = -(1 - logp.exp()) ** gamma * logp
//	        loss.backward()
//	        print(gamma, y, repr(loss.item()), [repr(v) for v in zt.grad.tolist()])
//
// PyTorch's 1 − exp(log p) cancels in the last row (ℓ ≈ 2.3e-5, so 1 − p carries a
// relative error near 1e-12): that row is held to 1e-9.
func TestFocalMatchesPyTorch(t *testing.T) {
	rows := [][]float64{{1.0, -0.5, 2.0, 0.25}, {3.0, 1.0, -2.0, 0.5}, {0.1, 0.2, 0.3, 4.0}, {12.0, -3.0, 0.0, 1.0}}
	labels := []int{0, 0, 2, 0}
	torch := []struct {
		gamma float64
		row   int
		loss  float64
		grad  []float64
	}{
		{0.5, 0, 1.3057505527777633, []float64{-0.8281184516130737, 0.05412717916297668, 0.6594040332628783, 0.11458723918721886}},
		{0.5, 1, 0.08654749425147595, []float64{-0.1137064190711084, 0.06865012499919478, 0.003417888466797314, 0.041638405605116356}},
		{0.5, 2, 3.7213028105574284, []float64{0.019580715203599268, 0.021640036998139597, -1.0085560384974321, 0.9673352862956934}},
		{0.5, 3, 1.1139546831627423e-07, []float64{-1.6709062352187527e-07, 2.207749519630763e-09, 4.434383449369353e-08, 1.2053903950840254e-07}},
		{1.0, 0, 1.1483456271843309, []float64{-0.8583773246717095, 0.05610494869597556, 0.6834981986543005, 0.11877417732143353}},
		{1.0, 1, 0.03703506094533672, []float64{-0.06378354638659602, 0.03850924572335203, 0.0019172624496233985, 0.023357038213620614}},
		{1.0, 2, 3.6779505952903935, []float64{0.02017962031548065, 0.022301929510477745, -1.0394042154304137, 0.9969226656044554}},
		{1.0, 3, 5.359879455225734e-10, []float64{-1.0719572778114075e-09, 1.4163650331001377e-11, 2.844845216904474e-10, 7.733091057890064e-10}},
		{2.0, 0, 0.8881727126562063, []float64{-0.8651278645335019, 0.056546175044494086, 0.6888734359804307, 0.11970825350857721}},
		{2.0, 1, 0.006781569139920443, []float64{-0.017219322985690105, 0.010396147245037063, 0.0005175936936510404, 0.006305582047002007}},
		{2.0, 2, 3.5927554074323327, []float64{0.021327901484974383, 0.023570976464776107, -1.0985494455889584, 1.053650567639208}},
		{2.0, 3, 1.2408806719315404e-14, []float64{-3.7225701958017826e-14, 4.918589917463098e-16, 9.879251939722365e-15, 2.685459102651608e-14}},
		{3.5, 0, 0.604135886313766, []float64{-0.7937732421643787, 0.05188231998661326, 0.6320560499042012, 0.10983487227356438}},
		{3.5, 1, 0.000531380837738546, []float64{-0.002000365787770329, 0.0012077186362598128, 6.012877031261067e-05, 0.0007325183811979063}},
		{3.5, 2, 3.468648501544744, []float64{0.022931014398081248, 0.02534269023473335, -1.1811219763722027, 1.1328482717393882}},
		{3.5, 3, 1.382268834851981e-21, []float64{-6.220081751604503e-21, 8.218523702720572e-23, 1.650734612850871e-21, 4.4871619017209e-21}},
	}
	for _, c := range torch {
		tol := 1e-13
		if c.row == 3 {
			tol = 1e-9
		}
		dz := make([]float64, 4)
		l := labelFocal(rows[c.row], labels[c.row], c.gamma, dz)
		if math.Abs(l-c.loss) > tol*c.loss {
			t.Errorf("γ=%v row %d: loss %v, PyTorch %v", c.gamma, c.row, l, c.loss)
		}
		var scale float64
		for _, g := range c.grad {
			scale = math.Max(scale, math.Abs(g))
		}
		for j := range dz {
			if math.Abs(dz[j]-c.grad[j]) > tol*scale {
				t.Errorf("γ=%v row %d: gradient %v, PyTorch %v", c.gamma, c.row, dz, c.grad)
				break
			}
		}
	}
}

// TestFocalOp: the Gorgonia op with γ > 0 sums the oracle's loss over one-hot rows and
// skips zero rows, its gradient op gives each row labelFocal's gradient times the upstream
// gradient (zero for padding), and a target row that is not one-hot is an error, not a
// panic.
func TestFocalOp(t *testing.T) {
	const k, gamma, up = 4, 2.0, 0.5
	z := []float64{0.3, -1.2, 2.1, 0.7, 22, 0, -3, 1, 5, 5, 5, 5}
	tg := []float64{0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0}
	want := focalOracle(z[0:4], 2, gamma) + focalOracle(z[4:8], 0, gamma)
	op := softmaxCrossEntropy{focal: gamma}
	v, err := op.Do(ceInputs(z, tg, k)...)
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(*v.(*G.F64)); math.Abs(got-want) > 1e-13*want {
		t.Fatalf("loss %v, want %v", got, want)
	}
	d, err := softmaxCrossEntropyGrad(op).Do(append(ceInputs(z, tg, k), G.NewF64(up))...)
	if err != nil {
		t.Fatal(err)
	}
	grad := d.Data().([]float64)
	row := make([]float64, k)
	for r, y := range []int{2, 0} {
		labelFocal(z[r*k:(r+1)*k], y, gamma, row)
		for j := range row {
			if grad[r*k+j] != up*row[j] {
				t.Fatalf("row %d: gradient %v, want %v × %v", r, grad[r*k:(r+1)*k], up, row)
			}
		}
	}
	for j := 8; j < 12; j++ {
		if grad[j] != 0 {
			t.Fatalf("padding row: gradient %v, want zeros", grad[8:])
		}
	}
	if op.Hashcode() == (softmaxCrossEntropy{}).Hashcode() || op.Hashcode() == (softmaxCrossEntropy{focal: 1}).Hashcode() {
		t.Error("the focal op hashes like the cross-entropy's or another γ's: Gorgonia would merge them")
	}
	soft := []float64{0, 0.5, 0.5, 0, 1, 0, 0, 0, 0, 0, 0, 0}
	if _, err := op.Do(ceInputs(z, soft, k)...); err == nil || !strings.Contains(err.Error(), "one-hot") {
		t.Errorf("soft targets: error %v, want one naming one-hot targets", err)
	}
	if _, err := softmaxCrossEntropyGrad(op).Do(append(ceInputs(z, soft, k), G.NewF64(1))...); err == nil {
		t.Error("soft targets: the gradient op gave no error")
	}
}

func TestParseLoss(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Loss
		back string
	}{
		{"cross-entropy", CrossEntropy, "cross-entropy"},
		{"focal:2", Focal(2), "focal:2"},
		{"focal:0.5", Focal(0.5), "focal:0.5"},
		{"focal:3.5", Focal(3.5), "focal:3.5"},
		{"focal:1e-3", Focal(0.001), "focal:0.001"},
		{"focal:0", CrossEntropy, "cross-entropy"},
	} {
		got, err := ParseLoss(c.in)
		if err != nil || got != c.want || got.String() != c.back {
			t.Errorf("ParseLoss(%q) = %v (%q), %v; want %v (%q)", c.in, got, got.String(), err, c.want, c.back)
		}
	}
	for _, bad := range []string{"", "focal:", "focal:-1", "focal:NaN", "focal:nan", "focal:Inf", "focal:+Inf", "focal:1e999", "focal:x", "focal", "Focal:2", "cross_entropy", "mse", " focal:2", "focal:2 "} {
		if l, err := ParseLoss(bad); !errors.Is(err, ErrSpec) {
			t.Errorf("ParseLoss(%q) = %v, %v; want ErrSpec", bad, l, err)
		}
	}
}

func TestNewRejectsBadGamma(t *testing.T) {
	for _, g := range []float64{-1, -1e-300, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := New(tinyCNN(), 2, WithLoss(Focal(g))); !errors.Is(err, ErrSpec) {
			t.Errorf("γ = %v: error %v, want ErrSpec", g, err)
		}
	}
}

// focalWeight is w = (1−p)^γ − γ(1−p)^(γ−1)·p·log p of one row of logits, from a plain
// softmax (the rows it is used with are moderate).
func focalWeight(z []float64, y int, gamma float64) float64 {
	var s float64
	for _, v := range z {
		s += math.Exp(v)
	}
	p := math.Exp(z[y]) / s
	return math.Pow(1-p, gamma) - gamma*math.Pow(1-p, gamma-1)*p*math.Log(p)
}

// TestFocalPerExampleGradients: on the tiny CNN (conv, tanh, max pool, dense) in float64
// with a padding row, the focal loss's per-example gradients of the native engine equal
// the Gorgonia engine's, and each equals w_i times the same example's cross-entropy
// gradient (the loss only rescales the gradient at the logits), w_i from the logits by
// focalWeight; the step's loss is Σ_i focalOracle. The clipped sum agrees across engines,
// and the float32 native engine's per-example gradients agree to float32 precision.
func TestFocalPerExampleGradients(t *testing.T) {
	const B, gamma = 5, 2.0
	spec := tinyCNN()
	rng := rand.New(rand.NewPCG(11, 12))
	x, labels := randomInputs(rng, spec, B)
	mask := []bool{true, true, false, true, true}
	b := Batch{X: x, Labels: labels, Mask: mask}
	build := func(e Engine, l Loss, dt ...DType) *Model {
		m, err := New(spec, B, WithDType(append(dt, Float64)[0]), WithSeed(3), WithEngine(e), WithLoss(l))
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float64, m.NumParams())
		m.Params(p)
		for j := range p {
			p[j] *= 3 // logits of a few units: p_y spread over (0, 1)
		}
		if err := m.SetParams(p); err != nil {
			t.Fatal(err)
		}
		return m
	}
	native, graph, ce := build(EngineNative, Focal(gamma)), build(EngineGorgonia, Focal(gamma)), build(EngineNative, CrossEntropy)
	if native.Engine() != EngineNative || native.Loss() != Focal(gamma) {
		t.Fatalf("engine %v, loss %v", native.Engine(), native.Loss())
	}
	logits := make([]float64, B*spec.NumClasses)
	if err := ce.Logits(b, logits); err != nil {
		t.Fatal(err)
	}
	d := native.NumParams()
	rule := clipping.Flat{C: 1}
	sums := make([][]float64, 3)
	losses := make([]float64, 3)
	f32 := build(EngineNative, Focal(gamma), Float32)
	if _, err := f32.ClippedGradient(b, rule, make([]float64, d)); err != nil {
		t.Fatal(err)
	}
	g32 := make([]float64, d)
	for k, m := range []*Model{native, graph, ce} {
		sums[k] = make([]float64, d)
		st, err := m.ClippedGradient(b, rule, sums[k])
		if err != nil {
			t.Fatal(err)
		}
		losses[k] = st.Loss
	}
	var want float64
	K := spec.NumClasses
	for i := range B {
		if mask[i] {
			want += focalOracle(logits[i*K:(i+1)*K], labels[i], gamma)
		}
	}
	if math.Abs(losses[0]-want) > 1e-12*want || math.Abs(losses[1]-want) > 1e-12*want {
		t.Fatalf("focal loss native %v, Gorgonia %v, oracle %v", losses[0], losses[1], want)
	}
	assertClose(t, "clipped sum (native vs Gorgonia)", sums[0], sums[1], 1e-10)
	gn, gg, gc := make([]float64, d), make([]float64, d), make([]float64, d)
	for i := range B {
		for _, c := range []struct {
			m   *Model
			dst []float64
		}{{native, gn}, {graph, gg}, {ce, gc}} {
			if err := c.m.PerExampleGradient(i, c.dst); err != nil {
				t.Fatal(err)
			}
		}
		if !mask[i] {
			for j := range gn {
				if gn[j] != 0 || gg[j] != 0 {
					t.Fatalf("padding row %d has a gradient", i)
				}
			}
			continue
		}
		assertClose(t, "per-example gradient (native vs Gorgonia)", gn, gg, 1e-10)
		w := focalWeight(logits[i*K:(i+1)*K], labels[i], gamma)
		scaled := make([]float64, d)
		for j, v := range gc {
			scaled[j] = w * v
		}
		assertClose(t, "per-example gradient (focal vs w·cross-entropy)", gn, scaled, 1e-10)
		if err := f32.PerExampleGradient(i, g32); err != nil {
			t.Fatal(err)
		}
		assertClose(t, "per-example gradient (native float32 vs float64)", g32, gn, 2e-5)
	}
}

// TestFocalZeroIsCrossEntropy: WithLoss(Focal(0)) and WithLoss(CrossEntropy) give the
// default model's steps bit for bit, on both engines, in float32.
func TestFocalZeroIsCrossEntropy(t *testing.T) {
	const B = 4
	spec := tinyCNN()
	rng := rand.New(rand.NewPCG(5, 6))
	x, labels := randomInputs(rng, spec, B)
	b := Batch{X: x, Labels: labels}
	for _, e := range []Engine{EngineNative, EngineGorgonia} {
		var ref []float64
		var refLoss float64
		for k, opts := range [][]Option{nil, {WithLoss(Focal(0))}, {WithLoss(CrossEntropy)}} {
			m, err := New(spec, B, append([]Option{WithSeed(9), WithEngine(e)}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			g := make([]float64, m.NumParams())
			st, err := m.ClippedGradient(b, clipping.Flat{C: 1}, g)
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 {
				ref, refLoss = g, st.Loss
				continue
			}
			for j := range g {
				if math.Float64bits(g[j]) != math.Float64bits(ref[j]) {
					t.Fatalf("%v, options %d: gradient[%d] %v, default %v", e, k, j, g[j], ref[j])
				}
			}
			if math.Float64bits(st.Loss) != math.Float64bits(refLoss) {
				t.Fatalf("%v, options %d: loss %v, default %v", e, k, st.Loss, refLoss)
			}
		}
	}
}
