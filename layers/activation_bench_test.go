package layers

import "testing"

// BenchmarkReLUForward times a ReLU on its own (after a GroupNorm: wrn-16-4's 64×32×32
// activations, one row) with the AVX-512 kernel (relu32AVX512) and with the Go loop:
//
//	go test -run '^$' -bench ReLUForward ./layers
func BenchmarkReLUForward(b *testing.B) {
	const n = 64 * 32 * 32
	in, out := make([]float32, n), make([]float32, n)
	for j := range in {
		in[j] = float32(j%7) - 3
	}
	o := &activationOp[float32]{f: actReLU}
	benchAsm(b, "", func(b *testing.B) {
		b.SetBytes(n * 4)
		for b.Loop() {
			o.forward(nil, 0, in, out, 1, 0)
		}
	})
}
