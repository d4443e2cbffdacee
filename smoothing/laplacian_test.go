package smoothing

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// mnistLayout is the TF Privacy MNIST tutorial CNN (digest §6.1) in PyTorch's layout:
// 26,010 parameters.
var mnistLayout = []Tensor{
	{"conv1/W", []int{16, 1, 8, 8}}, {"conv1/b", []int{16}},
	{"conv2/W", []int{32, 16, 4, 4}}, {"conv2/b", []int{32}},
	{"dense1/W", []int{512, 32}}, {"dense1/b", []int{32}},
	{"dense2/W", []int{32, 10}}, {"dense2/b", []int{10}},
}

// Per tensor, each tensor is smoothed on its own: checked block by block against the FFT
// implementation, an independent route to A_σ⁻¹.
func TestLaplacianPerTensor(t *testing.T) {
	const sigma = 1.0
	lap, err := NewLaplacian[float64](sigma, mnistLayout)
	if err != nil {
		t.Fatal(err)
	}
	if lap.Len() != 26010 {
		t.Fatalf("Len = %d, want 26010", lap.Len())
	}
	v := randomVector(rand.New(rand.NewPCG(21, 22)), 26010)
	want := make([]float64, len(v))
	off := 0
	for _, tensor := range mnistLayout {
		n, _ := tensor.Size()
		f, err := NewFFTSolver(n, sigma)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Solve(want[off:off+n], v[off:off+n]); err != nil {
			t.Fatal(err)
		}
		off += n
	}
	if err := lap.Smooth(v); err != nil {
		t.Fatal(err)
	}
	if e := maxAbsDiff(v, want); e > 1e-12 {
		t.Errorf("per-tensor smoothing differs from blockwise FFT by %g", e)
	}
}

func TestLaplacianWholeVector(t *testing.T) {
	const sigma = 3.0
	lap, err := NewLaplacian[float64](sigma, mnistLayout, WholeVector())
	if err != nil {
		t.Fatal(err)
	}
	v := randomVector(rand.New(rand.NewPCG(23, 24)), 26010)
	f, _ := NewFFTSolver(26010, sigma)
	want := make([]float64, len(v))
	if err := f.Solve(want, v); err != nil {
		t.Fatal(err)
	}
	if err := lap.Smooth(v); err != nil {
		t.Fatal(err)
	}
	if e := maxAbsDiff(v, want); e > 1e-12 {
		t.Errorf("whole-vector smoothing differs from FFT by %g", e)
	}
}

func TestLaplacianFloat32AndScalars(t *testing.T) {
	layout := []Tensor{{"scalar", nil}, {"pair", []int{2}}, {"m", []int{3, 4}}}
	lap, err := NewLaplacian[float32](2, layout)
	if err != nil {
		t.Fatal(err)
	}
	v := []float32{5, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	if err := lap.Smooth(v); err != nil {
		t.Fatal(err)
	}
	// A scalar tensor is unchanged (d = 1); the pair uses A⁻¹ = [[5, 4], [4, 5]]/9.
	want := []float64{5, 5.0 / 9, 4.0 / 9}
	for i, w := range want {
		if math.Abs(float64(v[i])-w) > 1e-7 {
			t.Errorf("v[%d] = %v, want %v", i, v[i], w)
		}
	}
	// The 3×4 tensor keeps its sum (66).
	sum := 0.0
	for _, x := range v[3:] {
		sum += float64(x)
	}
	if math.Abs(sum-66) > 1e-4 {
		t.Errorf("sum of smoothed 3×4 block = %v, want 66", sum)
	}
}

func TestLaplacianSigmaZeroIsIdentity(t *testing.T) {
	lap, err := NewLaplacian[float64](0, mnistLayout)
	if err != nil {
		t.Fatal(err)
	}
	v := randomVector(rand.New(rand.NewPCG(25, 26)), 26010)
	w := append([]float64(nil), v...)
	if err := lap.Smooth(w); err != nil {
		t.Fatal(err)
	}
	for i := range v {
		if v[i] != w[i] {
			t.Fatalf("σ = 0 changed v[%d]: %v → %v", i, v[i], w[i])
		}
	}
}

func TestLaplacianErrors(t *testing.T) {
	bad := []struct {
		name   string
		sigma  float64
		layout []Tensor
	}{
		{"empty layout", 1, nil},
		{"zero dimension", 1, []Tensor{{"w", []int{3, 0}}}},
		{"negative dimension", 1, []Tensor{{"w", []int{-1}}}},
		{"overflow", 1, []Tensor{{"w", []int{math.MaxInt / 2, 3}}}},
		{"negative sigma", -1, mnistLayout},
		{"NaN sigma", math.NaN(), mnistLayout},
	}
	for _, c := range bad {
		if _, err := NewLaplacian[float64](c.sigma, c.layout); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
		}
	}
	lap, _ := NewLaplacian[float64](1, mnistLayout)
	if err := lap.Smooth(make([]float64, 26009)); !errors.Is(err, ErrLength) {
		t.Errorf("short vector: err = %v, want ErrLength", err)
	}
}

func TestLaplacianDoesNotAllocate(t *testing.T) {
	lap, _ := NewLaplacian[float32](1, mnistLayout)
	v := make([]float32, lap.Len())
	if n := testing.AllocsPerRun(10, func() { _ = lap.Smooth(v) }); n != 0 {
		t.Errorf("Smooth allocates %v times per call", n)
	}
}

func BenchmarkLaplacianMNIST(b *testing.B) {
	for _, c := range []struct {
		name string
		opts []Option
	}{{"per-tensor", nil}, {"whole-vector", []Option{WholeVector()}}} {
		b.Run(c.name+"/float64", func(b *testing.B) {
			lap, _ := NewLaplacian[float64](1, mnistLayout, c.opts...)
			v := randomVector(rand.New(rand.NewPCG(1, 1)), lap.Len())
			b.ReportAllocs()
			for b.Loop() {
				_ = lap.Smooth(v)
			}
		})
		b.Run(c.name+"/float32", func(b *testing.B) {
			lap, _ := NewLaplacian[float32](1, mnistLayout, c.opts...)
			v := make([]float32, lap.Len())
			b.ReportAllocs()
			for b.Loop() {
				_ = lap.Smooth(v)
			}
		})
	}
}
