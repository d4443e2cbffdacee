package layers

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestDenseMatchesMatrixProduct(t *testing.T) {
	for _, l := range []Dense{{Units: 3}, {Units: 4, NoBias: true}, {Units: 1}} {
		const B, n = 4, 5
		for _, batch := range []int{B, 1} {
			r := runLayer(t, l, batch, []int{n}, rand.New(rand.NewPCG(1, 2)))
			want := make([]float64, batch*l.Units)
			for b := range batch {
				for o := range l.Units {
					s := 0.0
					if !l.NoBias {
						s = r.params[1][o]
					}
					for i := range n {
						s += r.x[b*n+i] * r.params[0][i*l.Units+o]
					}
					want[b*l.Units+o] = s
				}
			}
			assertNear(t, "dense", r.out, want, 1e-12)
			assertNear(t, "dense tap input", r.tapIn, r.x, 0)
		}
	}
	if _, err := (Dense{Units: 3}).OutputShape([]int{1, 28, 28}); err == nil {
		t.Error("dense accepted an image input")
	}
	if _, err := (Dense{}).OutputShape([]int{4}); err == nil {
		t.Error("dense accepted zero units")
	}
}

func TestActivationsAndFlatten(t *testing.T) {
	in := []int{2, 3, 2}
	for _, tc := range []struct {
		l Layer
		f func(float64) float64
	}{
		{ReLU{}, func(v float64) float64 { return math.Max(v, 0) }},
		{Tanh{}, math.Tanh},
		{Flatten{}, func(v float64) float64 { return v }},
	} {
		r := runLayer(t, tc.l, 3, in, rand.New(rand.NewPCG(1, 2)))
		want := make([]float64, len(r.x))
		for i, v := range r.x {
			want[i] = tc.f(v)
		}
		assertNear(t, tc.l.Kind(), r.out, want, 1e-15)
	}
	if s, _ := (Flatten{}).OutputShape(in); len(s) != 1 || s[0] != 12 {
		t.Errorf("flatten shape %v, want [12]", s)
	}
}

func TestInitializers(t *testing.T) {
	const n = 20000
	rng := rand.New(rand.NewPCG(1, 2))
	v := make([]float64, n)
	// Glorot: U(-l, l), l = sqrt(6/(fanIn+fanOut)); variance l²/3 = 2/(fanIn+fanOut).
	if err := (GlorotUniform{}).Fill(v, 64, 16, rng); err != nil {
		t.Fatal(err)
	}
	l := math.Sqrt(6.0 / 80)
	mean, variance := moments(v)
	for _, x := range v {
		if math.Abs(x) > l {
			t.Fatalf("glorot value %v outside ±%v", x, l)
		}
	}
	// Standard error of the variance estimate is about var·sqrt(0.8/n) ≈ 0.6 %; allow 5 %.
	if math.Abs(mean) > 0.01 || math.Abs(variance/(2.0/80)-1) > 0.05 {
		t.Errorf("glorot mean %v variance %v, want 0 and %v", mean, variance, 2.0/80)
	}
	if err := (HeNormal{}).Fill(v, 50, 10, rng); err != nil {
		t.Fatal(err)
	}
	mean, variance = moments(v)
	if math.Abs(mean) > 0.01 || math.Abs(variance/(2.0/50)-1) > 0.05 {
		t.Errorf("he mean %v variance %v, want 0 and %v", mean, variance, 2.0/50)
	}
	if err := (Zeros{}).Fill(v, 1, 1, rng); err != nil {
		t.Fatal(err)
	}
	for _, x := range v {
		if x != 0 {
			t.Fatal("zeros left a non-zero")
		}
	}
	if err := (HeNormal{}).Fill(v, 0, 1, rng); err == nil {
		t.Error("he-normal with zero fan-in accepted")
	}
	if err := (Constant{Value: 0.25}).Fill(v, 0, 0, nil); err != nil {
		t.Fatal(err)
	}
	for _, x := range v {
		if x != 0.25 {
			t.Fatalf("constant 0.25 left %v", x)
		}
	}
	if err := (Constant{Value: math.NaN()}).Fill(v, 1, 1, rng); err == nil {
		t.Error("constant NaN accepted")
	}
	// A nil initializer is GlorotUniform: the same draws from the same stream.
	a, b := make([]float64, 10), make([]float64, 10)
	if err := (ParamSpec{FanIn: 3, FanOut: 2}).Fill(a, rand.New(rand.NewPCG(7, 8))); err != nil {
		t.Fatal(err)
	}
	if err := (GlorotUniform{}).Fill(b, 3, 2, rand.New(rand.NewPCG(7, 8))); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Errorf("nil initializer drew %v, glorot-uniform %v", a, b)
	}
}

// TestStoredInitializers checks the stored names of weight initializers read back as the
// same value, nil (the default) as glorot-uniform, and that names of no kernel
// initializer are refused.
func TestStoredInitializers(t *testing.T) {
	for _, tc := range []struct {
		in   Initializer
		name string
	}{
		{nil, "glorot-uniform"}, {HeNormal{}, "he-normal"}, {Zeros{}, "zeros"},
		{Constant{Value: 0.25}, "constant:0.25"}, {Constant{Value: -1e-300}, "constant:-1e-300"},
	} {
		if got := kernelInitName(tc.in); got != tc.name {
			t.Errorf("%v stored as %q, want %q", tc.in, got, tc.name)
		}
		back, err := kernelInit(tc.name)
		if err != nil || back != tc.in {
			t.Errorf("%q read back as %v, %v; want %v", tc.name, back, err, tc.in)
		}
	}
	// "" is the default (glorot-uniform, nil), as a hand-written -model FILE.json leaves it
	// out; checkpoints always store the name.
	if in, err := kernelInit(""); err != nil || in != nil {
		t.Errorf(`"" read as %v, %v; want the default (nil)`, in, err)
	}
	for _, bad := range []string{"ones", "constant:", "constant:NaN", "constant:+Inf", "constant:x", "Glorot-Uniform"} {
		if in, err := kernelInit(bad); err == nil {
			t.Errorf("%q accepted as %v", bad, in)
		}
	}
}

func moments(v []float64) (mean, variance float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(v))
}
