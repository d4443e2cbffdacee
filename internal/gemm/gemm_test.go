package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/internal/cpupath"
)

// naive is the product written out from the definition, in float64.
func naive[T Float](m, n, k int, a Matrix[T], b []T, ldb int, c []T, ldc int, bias []T, f Flags) []float64 {
	out := make([]float64, m*n)
	for r := range m {
		for j := range n {
			var s float64
			switch {
			case f&Accumulate != 0:
				s = float64(c[r*ldc+j])
			case bias != nil:
				s = float64(bias[j])
			}
			for kk := range k {
				idx := r*a.Stride + kk
				if a.ColMajor {
					idx = kk*a.Stride + r
				}
				av := a.Data[idx]
				s += float64(av) * float64(b[kk*ldb+j])
			}
			if f&ReLU != 0 {
				s = math.Max(s, 0)
			}
			out[r*n+j] = s
		}
	}
	return out
}

func randSlice[T Float](rng *rand.Rand, n int) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = T(rng.NormFloat64())
	}
	return x
}

// testProducts checks Gemm on every combination of edge sizes around the kernels' block
// sizes (12 and 6 rows, 16-lane vectors, 64-column blocks), both layouts of A, strides
// larger than the matrices, and all flags; and that C outside the block is untouched.
func testProducts[T Float](t *testing.T, tol float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	ms := []int{1, 2, 5, 6, 7, 11, 12, 13, 25, 37}
	ns := []int{1, 3, 15, 16, 17, 31, 32, 33, 48, 50, 63, 64, 65, 100, 130}
	ks := []int{0, 1, 3, 16, 25, 64}
	const sentinel = 12345
	for _, m := range ms {
		for _, n := range ns {
			for _, k := range ks {
				for variant := range 8 {
					colA := variant&1 != 0
					f := Flags(0)
					if variant&2 != 0 {
						f |= ReLU
					}
					useBias, acc := variant&4 != 0, false
					if (m+n+k)%3 == 0 && !useBias {
						f |= Accumulate
						acc = true
					}
					pad := rng.IntN(3)
					a := Matrix[T]{ColMajor: colA}
					if colA {
						a.Stride = m + pad
						a.Data = randSlice[T](rng, max(0, (k-1)*a.Stride+m))
					} else {
						a.Stride = k + pad
						a.Data = randSlice[T](rng, max(0, (m-1)*a.Stride+k))
					}
					ldb, ldc := n+rng.IntN(3), n+1+rng.IntN(3)
					b := randSlice[T](rng, max(0, (k-1)*ldb+n))
					c := randSlice[T](rng, m*ldc)
					for r := range m {
						for j := n; j < ldc; j++ {
							c[r*ldc+j] = sentinel
						}
					}
					var bias []T
					if useBias {
						bias = randSlice[T](rng, n)
					}
					want := naive(m, n, k, a, b, ldb, c, ldc, bias, f)
					Gemm(m, n, k, a, b, ldb, c, ldc, bias, f)
					for r := range m {
						for j := range ldc {
							got := float64(c[r*ldc+j])
							if j >= n {
								if got != sentinel {
									t.Fatalf("m=%d n=%d k=%d colA=%v acc=%v bias=%v flags=%d: C[%d,%d] outside the block changed to %v",
										m, n, k, colA, acc, useBias, f, r, j, got)
								}
								continue
							}
							if d := math.Abs(got - want[r*n+j]); d > tol*(1+math.Sqrt(float64(k))) {
								t.Fatalf("m=%d n=%d k=%d colA=%v acc=%v bias=%v flags=%d: C[%d,%d] = %v, want %v",
									m, n, k, colA, acc, useBias, f, r, j, got, want[r*n+j])
							}
						}
					}
				}
			}
		}
	}
}

// TestGemmFloat32 checks the products on every path this CPU supports (cpupath).
func TestGemmFloat32(t *testing.T) {
	for _, p := range cpupath.Supported() {
		t.Run(p.String(), func(t *testing.T) {
			defer cpupath.Force(p)()
			testProducts[float32](t, 1e-5)
		})
	}
}

func TestGemmFloat64(t *testing.T) { testProducts[float64](t, 1e-13) }

func TestGemmShortSlicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a too short B")
		}
	}()
	a := Matrix[float32]{Data: make([]float32, 4*3), Stride: 3}
	Gemm(4, 5, 3, a, make([]float32, 14), 5, make([]float32, 20), 5, nil, 0)
}

// Shapes of the MNIST CNN's step at batch 256, per chunk of 8 examples.
var benchShapes = []struct {
	name    string
	m, n, k int
	colA    bool
}{
	{"conv1-forward", 8 * 196, 16, 64, false},
	{"conv2-forward", 8 * 25, 32, 256, false},
	{"conv2-input-grad", 8 * 25, 256, 32, false},
	{"conv1-example-grad", 16, 64, 196, true},
	{"conv2-example-grad", 32, 256, 25, true},
	{"dense1-forward", 256, 32, 512, false},
}

func BenchmarkGemm(b *testing.B) {
	for _, s := range benchShapes {
		for _, p := range cpupath.Supported() {
			b.Run(fmt.Sprintf("%s/%s", s.name, p), func(b *testing.B) {
				defer cpupath.Force(p)()
				rng := rand.New(rand.NewPCG(1, 2))
				a := Matrix[float32]{Data: randSlice[float32](rng, s.m*s.k), Stride: s.k, ColMajor: s.colA}
				if s.colA {
					a.Stride = s.m
				}
				bm, c := randSlice[float32](rng, s.k*s.n), make([]float32, s.m*s.n)
				for b.Loop() {
					Gemm(s.m, s.n, s.k, a, bm, s.n, c, s.n, nil, 0)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

func TestSumSquares(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 5, 31, 32, 33, 63, 64, 65, 96, 100, 1000, 8224} {
		x := randSlice[float32](rng, n)
		var want float64
		for _, v := range x {
			want += float64(v) * float64(v)
		}
		perPath := map[cpupath.Path]float64{}
		for _, p := range cpupath.Supported() {
			func() {
				defer cpupath.Force(p)()
				got := SumSquares(x)
				if math.Abs(got-want) > 1e-13*want {
					t.Fatalf("n=%d path %v: %v, want %v", n, p, got, want)
				}
				perPath[p] = got
			}()
		}
		// The AVX2 kernel sums in the AVX-512 kernel's lanes and order: bit for bit.
		a, ok1 := perPath[cpupath.AVX512]
		b, ok2 := perPath[cpupath.AVX2]
		if ok1 && ok2 && math.Float64bits(a) != math.Float64bits(b) {
			t.Fatalf("n=%d: avx2 %v, avx512 %v: not bit for bit", n, b, a)
		}
		x64 := make([]float64, n)
		for i, v := range x {
			x64[i] = float64(v)
		}
		if got := SumSquares(x64); math.Abs(got-want) > 1e-13*want {
			t.Fatalf("float64 n=%d: %v, want %v", n, got, want)
		}
	}
}

// BenchmarkSumSquares times the per-example squared norm of float32 gradients (the MNIST
// CNN's 26,010 parameters) on every CPU path:
//
//	go test -run '^$' -bench SumSquares ./internal/gemm
func BenchmarkSumSquares(b *testing.B) {
	x := randSlice[float32](rand.New(rand.NewPCG(1, 2)), 26010)
	for _, p := range cpupath.Supported() {
		b.Run("path="+p.String(), func(b *testing.B) {
			defer cpupath.Force(p)()
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				SumSquares(x)
			}
		})
	}
}

// TestGemmAVX2MatchesAVX512: the AVX2 micro-kernels accumulate each C value over k in the
// AVX-512 ones' order (one FMA per k, bias first, ReLU last), so the two paths' float32
// products are equal bit for bit — what lets the AVX2 path share the AVX-512 path's
// training pins (models/pin_test.go). Shapes cross both paths' block edges (8, 16 and 64
// columns; 6 and 12 rows). On a CPU without AVX-512 there is no pair to compare.
func TestGemmAVX2MatchesAVX512(t *testing.T) {
	if !cpupath.Supports(cpupath.AVX512) || !cpupath.Supports(cpupath.AVX2) {
		t.Logf("this CPU runs %v: nothing to compare", cpupath.Supported())
		return
	}
	rng := rand.New(rand.NewPCG(38, 5))
	run := func(p cpupath.Path, m, n, k int, a Matrix[float32], b, c, bias []float32, f Flags) []float32 {
		defer cpupath.Force(p)()
		c = append([]float32(nil), c...)
		Gemm(m, n, k, a, b, n, c, n, bias, f)
		return c
	}
	for _, m := range []int{1, 5, 6, 7, 12, 13, 25} {
		for _, n := range []int{1, 7, 8, 9, 16, 17, 63, 64, 65, 100} {
			for _, k := range []int{0, 1, 3, 16, 37} {
				for _, colA := range []bool{false, true} {
					stride := k
					if colA {
						stride = m
					}
					a := Matrix[float32]{Data: randSlice[float32](rng, m*k), Stride: stride, ColMajor: colA}
					b, c, bias := randSlice[float32](rng, k*n), randSlice[float32](rng, m*n), randSlice[float32](rng, n)
					for _, f := range []Flags{0, ReLU, Accumulate, Accumulate | ReLU} {
						for _, bs := range [][]float32{nil, bias} {
							x := run(cpupath.AVX512, m, n, k, a, b, c, bs, f)
							y := run(cpupath.AVX2, m, n, k, a, b, c, bs, f)
							for i := range x {
								if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
									t.Fatalf("m=%d n=%d k=%d colA=%v flags=%d bias=%v: C[%d] avx512 %v, avx2 %v", m, n, k, colA, f, bs != nil, i, x[i], y[i])
								}
							}
						}
					}
				}
			}
		}
	}
}
