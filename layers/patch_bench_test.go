package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkPatches times im2col and col2im (patchCopy32, patchAdd32 and their AVX2 and Go
// versions) on one image of the MNIST CNN's two convolutions (runs of 8 and 64 values) and
// of the CIFAR-10 CNN's 3×3 convolutions on 3 and 64 channels (runs of 9 and 192), on
// every CPU path:
//
//	go test -run '^$' -bench Patches ./layers
func BenchmarkPatches(b *testing.B) {
	for _, s := range []struct {
		name             string
		h, c, f, kern, s int
		pad              int
	}{
		{"mnist-conv1", 28, 1, 16, 8, 2, 3},
		{"mnist-conv2", 13, 16, 32, 4, 2, 0},
		{"cifar-conv1", 32, 3, 32, 3, 1, 1},
		{"cifar-conv3", 16, 64, 128, 3, 1, 1},
	} {
		l := Conv2D{Filters: s.f, Kernel: [2]int{s.kern, s.kern}, Stride: [2]int{s.s, s.s}, Padding: [2]int{s.pad, s.pad}}
		in := activation{image: true, nhwc: true, h: s.h, w: s.h, c: s.c, n: s.h * s.h * s.c}
		w := make([]float32, s.f*s.c*s.kern*s.kern)
		o, _, err := newConvOp[float32](l, in, 1, [][]float32{w, make([]float32, s.f)}, actNone, false, false)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		x := randFloat32s(rng, in.n)
		u := make([]float32, o.p*o.k)
		du, dx := randFloat32s(rng, o.p*o.k), make([]float32, in.n)
		benchAsm(b, fmt.Sprintf("%s/im2col/", s.name), func(b *testing.B) {
			b.SetBytes(int64(4 * len(u)))
			for b.Loop() {
				o.im2col(x, u)
			}
		})
		benchAsm(b, fmt.Sprintf("%s/col2im/", s.name), func(b *testing.B) {
			b.SetBytes(int64(4 * len(du)))
			for b.Loop() {
				o.col2im(du, dx)
			}
		})
	}
}

// BenchmarkMaxPool times max-pooling forward and backward on one image of the MNIST CNN's
// two pools (2×2, stride 1, on 14×14×16 and 5×5×32) and a CIFAR-10 CNN's (2×2, stride 2, on
// 32×32×32), on every CPU path:
//
//	go test -run '^$' -bench MaxPool ./layers
func BenchmarkMaxPool(b *testing.B) {
	for _, s := range []struct {
		name      string
		h, c, str int
	}{{"mnist-pool1", 14, 16, 1}, {"mnist-pool2", 5, 32, 1}, {"cifar-pool1", 32, 32, 2}} {
		in := activation{image: true, nhwc: true, h: s.h, w: s.h, c: s.c, n: s.h * s.h * s.c}
		o, out, err := newMaxPoolOp[float32](MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{s.str, s.str}}, in)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		x, g := randFloat32s(rng, in.n), randFloat32s(rng, out.n)
		y, dx := make([]float32, out.n), make([]float32, in.n)
		sc := &nativeScratch[float32]{indices: [][]int32{make([]int32, out.n)}}
		benchAsm(b, s.name+"/", func(b *testing.B) {
			b.SetBytes(int64(4 * in.n))
			for b.Loop() {
				o.forward(sc, 0, x, y, 1, 0)
				o.backward(sc, 0, nil, nil, g, dx, 1, 0)
			}
		})
	}
}
