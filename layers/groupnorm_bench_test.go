package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkGroupNormNative times GroupNorm's native op with the ReLU after it fused, as
// in the residual networks, forward and backward (with the per-example γ, β gradient) on float32 rows of 64k values, in wrn-16-4's and wide-cnn-28's shapes,
// with the AVX-512 kernels (groupnorm_amd64.s) and with their Go versions:
//
//	go test -run '^$' -bench GroupNormNative ./layers
func BenchmarkGroupNormNative(b *testing.B) {
	for _, s := range []struct{ c, h, groups int }{{64, 32, 16}, {256, 8, 16}, {32, 28, 8}} {
		benchAsm(b, fmt.Sprintf("C=%d/HW=%d/groups=%d/", s.c, s.h*s.h, s.groups), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			fill := func(n int) []float32 {
				v := make([]float32, n)
				for j := range v {
					v[j] = float32(rng.NormFloat64())
				}
				return v
			}
			size := s.c * s.h * s.h
			rows := max(1, (1<<16)/size) // a chunk's rows: its buffers stay in L2
			o := &groupNormOp[float32]{c: s.c, p: s.h * s.h, groups: s.groups, gamma: fill(s.c), beta: fill(s.c), affine: true, relu: true,
				formed: make([]float32, rows*2*s.c)}
			f, _ := o.scratchSize()
			sc := &nativeScratch[float32]{floats: [][]float32{make([]float32, rows*f)}, wide: [][]float64{make([]float64, o.wideScratch())}}
			x, y, dy, dx := fill(rows*size), make([]float32, rows*size), fill(rows*size), make([]float32, rows*size)
			b.SetBytes(int64(rows * size * 4))
			for b.Loop() {
				o.forward(sc, 0, x, y, rows, 0)
				o.backward(sc, 0, x, y, dy, dx, rows, 0)
			}
		})
	}
}
