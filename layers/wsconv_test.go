package layers

import (
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/internal/num"
)

// TestWSConvNativePerExampleGradients checks the native engine's per-example gradients of
// weight-standardised convolutions, float64 to 1e-10 and float32 to float32 precision,
// against batch-1 reverse mode through the Gorgonia graph's own standardisation, example
// by example. The rows of C·kh·kw = 72 and 16 weights run the AVX-512 chain rule in
// float32 where there is AVX-512 (wsconv_amd64.s; 72 ends in a single block of 8), the
// rows of 27 its Go version.
func TestWSConvNativePerExampleGradients(t *testing.T) {
	const b = 5
	for si, st := range []struct {
		name string
		in   []int
		ls   []Layer
	}{
		{"wide-rows", []int{8, 4, 4}, []Layer{
			WSConv2D{Filters: 16, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, GroupNorm{Groups: 4}, ReLU{},
			WSConv2D{Filters: 8, Kernel: [2]int{1, 1}, Stride: [2]int{2, 2}}, GroupNorm{Groups: 2}, Flatten{}, Dense{Units: 3}}},
		{"rows-of-27", []int{3, 5, 5}, []Layer{
			WSConv2D{Filters: 4, Kernel: [2]int{3, 3}, NoBias: true}, Tanh{}, Flatten{}, Dense{Units: 2}}},
	} {
		t.Run(st.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(si), 19))
			params, x, out := randomStack(rng, st.ls, st.in, b)
			r := randomValues(rng, b*num.Prod(out))
			checkNativeExampleGradients(t, st.ls, st.in, b, params, x, r)
		})
	}
}

// BenchmarkWSChain times WSConv2D's chain rule through the standardisation on one
// example's weight gradient of wrn-16-4's widest convolution (256 filters of 256·3·3), with
// the AVX-512 kernel (wsconv_amd64.s) and with its Go version:
//
//	go test -run '^$' -bench WSChain ./layers
func BenchmarkWSChain(b *testing.B) {
	const f, k = 256, 2304
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, f*k)
	for j := range w {
		w[j] = float32(rng.NormFloat64())
	}
	what, rstd := make([]float32, f*k), make([]float32, f)
	standardize(w, what, rstd, f, k)
	grad := make([]float32, f*k)
	benchAsm(b, "", func(b *testing.B) {
		b.SetBytes(int64(f * k * 4))
		for b.Loop() {
			copy(grad, w) // the chain rule works in place
			wsChain(grad, what, rstd, f, k)
		}
	})
}
