package smoothing

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// rowMajor returns the row-major index of idx in shape.
func rowMajor(idx, shape []int) int {
	p := 0
	for i, s := range shape {
		p = p*s + idx[i]
	}
	return p
}

// unravel is rowMajor's inverse.
func unravel(p int, shape []int) []int {
	idx := make([]int, len(shape))
	for i := len(shape) - 1; i >= 0; i-- {
		idx[i] = p % shape[i]
		p /= shape[i]
	}
	return idx
}

// without returns s without entry k.
func without(s []int, k int) []int {
	return append(append([]int(nil), s[:k]...), s[k+1:]...)
}

// ringOrder lists the storage indices of a tensor in the order the axis reads it, from
// the definition: Flat is row-major; Along(k) and Lines(k) order by (the row-major index
// of the other axes, then index k).
func ringOrder(shape []int, a Axis) []int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	order := make([]int, n)
	for p := range order {
		if a.kind == axisFlat {
			order[p] = p
			continue
		}
		k := a.dim
		outer := unravel(p/shape[k], without(shape, k))
		idx := append(append(append([]int(nil), outer[:k]...), p%shape[k]), outer[k:]...)
		order[p] = rowMajor(idx, shape)
	}
	return order
}

// addRing adds σ times the periodic Laplacian's −L of the ring that visits the storage
// indices ring in order: +2σ on each diagonal entry, −σ to each of its two neighbours
// (the same one twice for a ring of 2; itself for a ring of 1, which cancels).
func addRing(a *mat.Dense, ring []int, sigma float64) {
	m := len(ring)
	for p, i := range ring {
		next, prev := ring[(p+1)%m], ring[(p+m-1)%m]
		a.Set(i, i, a.At(i, i)+2*sigma)
		a.Set(i, next, a.At(i, next)-sigma)
		a.Set(i, prev, a.At(i, prev)-sigma)
	}
}

// bruteForce returns (I + σL)⁻¹v for the operator the layout and axes describe, built as
// a dense matrix from the rings of neighbours and solved by LU.
func bruteForce(t *testing.T, sigma float64, layout []Tensor, axes []Axis, whole bool, v []float64) []float64 {
	t.Helper()
	d := len(v)
	a := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		a.Set(i, i, 1)
	}
	var all []int
	off := 0
	for i, tn := range layout {
		n, _ := tn.Size()
		order := ringOrder(tn.Shape, axes[i])
		for p := range order {
			order[p] += off
		}
		switch {
		case whole:
			all = append(all, order...)
		case axes[i].kind == axisLines:
			m := tn.Shape[axes[i].dim]
			for p := 0; p < n; p += m {
				addRing(a, order[p:p+m], sigma)
			}
		default:
			addRing(a, order, sigma)
		}
		off += n
	}
	if whole {
		addRing(a, all, sigma)
	}
	var lu mat.LU
	lu.Factorize(a)
	var u mat.VecDense
	if err := lu.SolveVecTo(&u, false, mat.NewVecDense(d, append([]float64(nil), v...))); err != nil {
		t.Fatal(err)
	}
	return append([]float64(nil), u.RawVector().Data...)
}

// Each axis on small shapes against the dense matrix (I + σL)⁻¹ built from the neighbour
// rings that the Axis documentation defines.
func TestAxesMatchBruteForce(t *testing.T) {
	cases := []struct {
		shape []int
		axis  Axis
	}{
		{[]int{3, 4}, Along(0)}, {[]int{3, 4}, Lines(0)}, {[]int{3, 4}, Along(1)}, {[]int{3, 4}, Lines(1)},
		{[]int{2, 3, 4}, Along(0)}, {[]int{2, 3, 4}, Along(1)}, {[]int{2, 3, 4}, Lines(1)},
		{[]int{2, 3, 4}, Lines(2)}, {[]int{4, 1, 3}, Along(1)}, {[]int{2, 5}, Lines(0)},
		{[]int{1, 5}, Lines(0)}, {[]int{5}, Along(0)}, {[]int{3, 2, 2, 2}, Along(1)},
		{[]int{3, 2, 2, 2}, Flat()}, {[]int{7, 3}, Along(0)},
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for _, sigma := range []float64{0.5, 2} {
		for _, c := range cases {
			layout := []Tensor{{Name: "w", Shape: c.shape}}
			n, _ := layout[0].Size()
			v := randomVector(rng, n)
			want := bruteForce(t, sigma, layout, []Axis{c.axis}, false, v)
			lap, err := NewLaplacian[float64](sigma, layout, Axes(c.axis))
			if err != nil {
				t.Fatal(err)
			}
			if err := lap.Smooth(v); err != nil {
				t.Fatal(err)
			}
			if e := maxAbsDiff(v, want); e > 1e-12 {
				t.Errorf("σ=%v shape %v %v: differs from the dense inverse by %g", sigma, c.shape, c.axis, e)
			}
		}
	}
}

// A layout whose tensors have different axes, per tensor and as one whole vector.
func TestAxesLayoutMatchesBruteForce(t *testing.T) {
	layout := []Tensor{
		{Name: "conv.weight", Shape: []int{2, 3, 2, 2}}, {Name: "conv.bias", Shape: []int{2}},
		{Name: "dense.weight", Shape: []int{6, 4}}, {Name: "dense.bias", Shape: []int{4}},
	}
	rng := rand.New(rand.NewPCG(33, 34))
	for _, whole := range []bool{false, true} {
		for _, axes := range [][]Axis{
			{Flat(), Flat(), Along(0), Flat()},
			{Along(1), Along(0), Along(0), Flat()},
			{Lines(3), Flat(), Lines(0), Lines(0)},
		} {
			if whole && axes[0].kind == axisLines {
				continue
			}
			v := randomVector(rng, 2*3*2*2+2+6*4+4)
			want := bruteForce(t, 1, layout, axes, whole, v)
			opts := []Option{Axes(axes...)}
			if whole {
				opts = append(opts, WholeVector())
			}
			lap, err := NewLaplacian[float64](1, layout, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := lap.Smooth(v); err != nil {
				t.Fatal(err)
			}
			if e := maxAbsDiff(v, want); e > 1e-12 {
				t.Errorf("whole=%v axes %v: differs from the dense inverse by %g", whole, axes, e)
			}
		}
	}
}

// Along(0) of a dense weight stored [in, out] is what the DP-LSSGD authors' code does to
// PyTorch's nn.Linear(784, 10) weight, stored [out, in]: the FFT of the whole
// row-major [out, in] vector of 7,840 values divided by the eigenvalues. Checked against
// that route: transpose, FFT solve, transpose back.
func TestAlongInputsIsThePaperCode(t *testing.T) {
	const in, out, sigma = 784, 10, 1.0
	rng := rand.New(rand.NewPCG(35, 36))
	w := randomVector(rng, in*out) // [in, out]
	wt := make([]float64, in*out)  // [out, in], PyTorch's layout
	for i := 0; i < in; i++ {
		for j := 0; j < out; j++ {
			wt[j*in+i] = w[i*out+j]
		}
	}
	f, err := NewFFTSolver(in*out, sigma)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Solve(wt, wt); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, in*out)
	for i := 0; i < in; i++ {
		for j := 0; j < out; j++ {
			want[i*out+j] = wt[j*in+i]
		}
	}
	lap, err := NewLaplacian[float64](sigma, []Tensor{{Name: "dense1.weight", Shape: []int{in, out}}}, Axes(Along(0)))
	if err != nil {
		t.Fatal(err)
	}
	if err := lap.Smooth(w); err != nil {
		t.Fatal(err)
	}
	if e := maxAbsDiff(w, want); e > 1e-12 {
		t.Errorf("along the inputs differs from the authors' [out, in] FFT smoothing by %g", e)
	}
}

// Reading orders that are the storage order give exactly today's flat operator: the
// last axis, a 1-D tensor, an axis followed only by size-1 axes, Lines of a 1-D tensor.
func TestAxesEqualFlat(t *testing.T) {
	cases := []struct {
		shape []int
		axis  Axis
	}{
		{[]int{16, 1, 8, 8}, Along(3)}, {[]int{512, 32}, Along(1)}, {[]int{32}, Along(0)},
		{[]int{32}, Lines(0)}, {[]int{6, 4, 1, 1}, Along(1)}, {[]int{1, 40}, Along(0)},
		{[]int{10}, Flat()},
	}
	rng := rand.New(rand.NewPCG(37, 38))
	for _, c := range cases {
		layout := []Tensor{{Name: "t", Shape: c.shape}}
		n, _ := layout[0].Size()
		v := randomVector(rng, n)
		want := append([]float64(nil), v...)
		flat, err := NewLaplacian[float64](1.5, layout)
		if err != nil {
			t.Fatal(err)
		}
		axis, err := NewLaplacian[float64](1.5, layout, Axes(c.axis))
		if err != nil {
			t.Fatal(err)
		}
		if err := flat.Smooth(want); err != nil {
			t.Fatal(err)
		}
		if err := axis.Smooth(v); err != nil {
			t.Fatal(err)
		}
		for i := range v {
			if v[i] != want[i] {
				t.Errorf("shape %v %v: value %d is %v, flat gives %v", c.shape, c.axis, i, v[i], want[i])
				break
			}
		}
	}
}

// float32 vectors take the same route (within float32 rounding), without allocating.
func TestAxesFloat32NoAlloc(t *testing.T) {
	layout := []Tensor{{Name: "w", Shape: []int{20, 7}}, {Name: "b", Shape: []int{7}}}
	axes := []Axis{Along(0), Flat()}
	v := randomVector(rand.New(rand.NewPCG(39, 40)), 147)
	want := bruteForce(t, 2, layout, axes, false, v)
	lap, err := NewLaplacian[float32](2, layout, Axes(axes...))
	if err != nil {
		t.Fatal(err)
	}
	v32 := make([]float32, len(v))
	for i, x := range v {
		v32[i] = float32(x)
	}
	if err := lap.Smooth(v32); err != nil {
		t.Fatal(err)
	}
	for i := range v32 {
		if math.Abs(float64(v32[i])-want[i]) > 1e-5 {
			t.Fatalf("value %d: %v, want %v", i, v32[i], want[i])
		}
	}
	if n := testing.AllocsPerRun(20, func() { _ = lap.Smooth(v32) }); n != 0 {
		t.Errorf("Smooth allocates %v times", n)
	}
}

func TestAxesErrors(t *testing.T) {
	w := []Tensor{{Name: "w", Shape: []int{3, 4}}}
	for _, c := range []struct {
		name   string
		layout []Tensor
		opts   []Option
	}{
		{"axis past the last", w, []Option{Axes(Along(2))}},
		{"negative axis", w, []Option{Axes(Lines(-1))}},
		{"scalar along 0", []Tensor{{Name: "s"}}, []Option{Axes(Along(0))}},
		{"too few axes", []Tensor{w[0], {Name: "b", Shape: []int{4}}}, []Option{Axes(Along(0))}},
		{"too many axes", w, []Option{Axes(Flat(), Flat())}},
		{"lines in a whole vector", w, []Option{Axes(Lines(0)), WholeVector()}},
	} {
		if _, err := NewLaplacian[float64](1, c.layout, c.opts...); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
		}
	}
	// A scalar in storage order stays fine.
	if _, err := NewLaplacian[float64](1, []Tensor{{Name: "s"}}, Axes(Flat())); err != nil {
		t.Errorf("scalar, flat: %v", err)
	}
}

func TestAxisString(t *testing.T) {
	for a, want := range map[Axis]string{Flat(): "flat", Along(0): "along axis 0", Lines(2): "lines along axis 2"} {
		if got := a.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
	if !Flat().IsFlat() || Along(0).IsFlat() || !(Axis{}).IsFlat() {
		t.Error("IsFlat: want true only for Flat, the zero Axis")
	}
}
