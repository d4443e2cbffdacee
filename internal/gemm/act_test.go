package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/privtrain/privtrain/internal/cpupath"
)

// The float32 activations are checked against float64 math.Tanh and math.Exp rounded to
// float32, in ulps: the distance between the two float32 values in the order of their bit
// patterns (adjacent floats are 1 apart, +0 and −0 are the same point).

// maxULP is the bound the tests hold every path to. The exhaustive sweep over all 2³²
// patterns measured 1 ulp for tanh (since it computes 1 − 2·E/(1+E) above the polynomial
// range) and 2 ulps for sigmoid on each of the go, avx2 and avx512 paths (amd64,
// 2026-11-24, PRIVTRAIN_EXHAUSTIVE=1, 437 s); the bound leaves room for a compiler that fuses the Go path's
// multiply-adds (arm64).
const maxULP = 4

func ordered(f float32) int64 {
	b := math.Float32bits(f)
	if b&(1<<31) != 0 {
		return -int64(b &^ (1 << 31))
	}
	return int64(b)
}

func ulps(got, want float32) int64 {
	d := ordered(got) - ordered(want)
	if d < 0 {
		d = -d
	}
	return d
}

func refTanh(x float32) float32 { return float32(math.Tanh(float64(x))) }

func refSigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

// actPaths are the implementations this machine can run ("go" is the generic path).
func actPaths() []string {
	var paths []string
	for _, p := range cpupath.Supported() {
		if p == cpupath.Generic {
			paths = append(paths, "go")
		} else {
			paths = append(paths, p.String())
		}
	}
	return paths
}

func withPath(path string, f func()) {
	p := cpupath.Generic
	if path != "go" {
		var err error
		if p, err = cpupath.Parse(path); err != nil {
			panic(err)
		}
	}
	defer cpupath.Force(p)()
	f()
}

// sweepResult is the worst case of a sweep.
type sweepResult struct {
	maxULP int64
	worstX float32
	bad    string // a special-value failure
	n      int64
}

// sweep evaluates f on the float32 values with bit patterns lo, lo+step, … < hi (NaNs
// checked for propagation, everything else against ref) in parallel blocks.
func sweep(f func(dst, src []float32), ref func(float32) float32, lo, hi, step uint64) sweepResult {
	const block = 1 << 16
	var mu sync.Mutex
	var res sweepResult
	next := make(chan uint64)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := make([]float32, 0, block)
			dst := make([]float32, block)
			var local sweepResult
			for start := range next {
				src = src[:0]
				for b := start; b < hi && len(src) < block; b += step {
					src = append(src, math.Float32frombits(uint32(b)))
				}
				f(dst[:len(src)], src)
				for i, x := range src {
					y := dst[i]
					if x != x {
						if y == y && local.bad == "" {
							local.bad = fmt.Sprintf("f(NaN %#x) = %v", math.Float32bits(x), y)
						}
						continue
					}
					local.n++
					want := ref(x)
					if y != y {
						if local.bad == "" {
							local.bad = fmt.Sprintf("f(%v) = NaN, want %v", x, want)
						}
						continue
					}
					if u := ulps(y, want); u > local.maxULP {
						local.maxULP, local.worstX = u, x
					}
				}
			}
			mu.Lock()
			res.n += local.n
			if local.maxULP > res.maxULP {
				res.maxULP, res.worstX = local.maxULP, local.worstX
			}
			if res.bad == "" {
				res.bad = local.bad
			}
			mu.Unlock()
		}()
	}
	for b := lo; b < hi; b += block * step {
		next <- b
	}
	close(next)
	wg.Wait()
	return res
}

type actCase struct {
	name string
	f    func(dst, src []float32)
	ref  func(float32) float32
}

var actCases = []actCase{
	{"tanh", Tanh[float32], refTanh},
	{"sigmoid", Sigmoid[float32], refSigmoid},
}

// TestActivationSweep checks every path on a strided sweep of all float32 bit patterns
// and on every pattern around 0, the tanh branch point and the saturation points.
func TestActivationSweep(t *testing.T) {
	// Each interval's values and their negatives: the smallest subnormals, the tanh
	// polynomial's range near 0 and its switch to the exp form at 0.625, tanh's rounding to
	// ±1 near 9.01, σ's rounding to 1 near 16.6, its subnormal results below −87.3 and its
	// underflow to 0 near −103.9 (and the exp argument's clamp at 104).
	dense := [][2]float32{
		{0, 1e-43}, {1e-3, 1.01e-3}, {0.6, 0.65}, {8.9, 9.1}, {16.5, 16.7}, {87, 87.6}, {103.5, 104.5},
	}
	for _, path := range actPaths() {
		for _, c := range actCases {
			t.Run(path+"/"+c.name, func(t *testing.T) {
				withPath(path, func() {
					check := func(r sweepResult, what string) {
						if r.bad != "" {
							t.Errorf("%s: %s", what, r.bad)
						}
						if r.maxULP > maxULP {
							t.Errorf("%s: %d ulps at x = %v (%#x): got %v, want %v", what, r.maxULP, r.worstX,
								math.Float32bits(r.worstX), apply(c.f, r.worstX), c.ref(r.worstX))
						}
						t.Logf("%s: %d values, max %d ulps", what, r.n, r.maxULP)
					}
					check(sweep(c.f, c.ref, 0, 1<<32, 4099), "every 4099th pattern")
					for _, d := range dense {
						for _, s := range []float32{1, -1} {
							a, b := math.Float32bits(s*d[0]), math.Float32bits(s*d[1])
							if a > b {
								a, b = b, a
							}
							check(sweep(c.f, c.ref, uint64(a), uint64(b)+1, 1), fmt.Sprintf("all in ±[%v, %v]", d[0], d[1]))
						}
					}
				})
			})
		}
	}
}

func apply(f func(dst, src []float32), x float32) float32 {
	d := []float32{0}
	f(d, []float32{x})
	return d[0]
}

// TestActivationExhaustive runs every float32 bit pattern through every path; it takes
// minutes, so it runs only with PRIVTRAIN_EXHAUSTIVE=1.
func TestActivationExhaustive(t *testing.T) {
	if os.Getenv("PRIVTRAIN_EXHAUSTIVE") == "" {
		t.Skip("set PRIVTRAIN_EXHAUSTIVE=1 to check all 2³² float32 values")
	}
	for _, path := range actPaths() {
		for _, c := range actCases {
			withPath(path, func() {
				r := sweep(c.f, c.ref, 0, 1<<32, 1)
				if r.bad != "" {
					t.Errorf("%s/%s: %s", path, c.name, r.bad)
				}
				if r.maxULP > maxULP {
					t.Errorf("%s/%s: %d ulps at x = %v", path, c.name, r.maxULP, r.worstX)
				}
				t.Logf("%s/%s: all %d non-NaN values, max %d ulps (at x = %v)", path, c.name, r.n, r.maxULP, r.worstX)
			})
		}
	}
}

// TestActivationSpecial checks the values the definitions fix exactly.
func TestActivationSpecial(t *testing.T) {
	inf := float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	for _, path := range actPaths() {
		withPath(path, func() {
			for _, c := range []struct {
				name    string
				f       func(dst, src []float32)
				x, want float32
			}{
				{"tanh", Tanh[float32], inf, 1}, {"tanh", Tanh[float32], -inf, -1},
				{"tanh", Tanh[float32], 0, 0}, {"tanh", Tanh[float32], 100, 1}, {"tanh", Tanh[float32], -20, -1},
				{"tanh", Tanh[float32], 1e-30, 1e-30}, {"tanh", Tanh[float32], math.SmallestNonzeroFloat32, math.SmallestNonzeroFloat32},
				{"sigmoid", Sigmoid[float32], inf, 1}, {"sigmoid", Sigmoid[float32], -inf, 0},
				{"sigmoid", Sigmoid[float32], 0, 0.5}, {"sigmoid", Sigmoid[float32], negZero, 0.5},
				{"sigmoid", Sigmoid[float32], -200, 0}, {"sigmoid", Sigmoid[float32], 100, 1},
			} {
				if got := apply(c.f, c.x); got != c.want {
					t.Errorf("%s: %s(%v) = %v, want %v", path, c.name, c.x, got, c.want)
				}
			}
			if got := apply(Tanh[float32], negZero); got != 0 || !math.Signbit(float64(got)) {
				t.Errorf("%s: tanh(−0) = %v, want −0", path, got)
			}
			// tanh is odd bit for bit: the kernels work on |x| and copy the sign.
			rng := rand.New(rand.NewPCG(1, 2))
			x := make([]float32, 1000)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 3)
			}
			y, yn := make([]float32, len(x)), make([]float32, len(x))
			Tanh(y, x)
			for i := range x {
				x[i] = -x[i]
			}
			Tanh(yn, x)
			for i := range y {
				if y[i] != -yn[i] {
					t.Fatalf("%s: tanh(%v) = %v but tanh(%v) = %v", path, -x[i], y[i], x[i], yn[i])
				}
			}
		})
	}
}

// TestActivationShapes checks the fused and in-place forms against the elementwise
// definitions at lengths around the block size, for float32 on every path and float64.
func TestActivationShapes(t *testing.T) {
	for _, path := range actPaths() {
		withPath(path, func() { testShapes[float32](t, path, 4) })
	}
	testShapes[float64](t, "float64", 0)
}

func testShapes[T Float](t *testing.T, path string, tolULP int64) {
	rng := rand.New(rand.NewPCG(3, 4))
	near := func(got T, want float64) bool {
		if _, ok := any(got).(float32); ok {
			return ulps(float32(got), float32(want)) <= tolULP
		}
		return math.Abs(float64(got)-want) <= 1e-15*math.Max(1, math.Abs(want))
	}
	defs := []struct {
		name  string
		f     func(dst, src []T)
		fb    func(x, b []T)
		fg    func(dz, g, y []T)
		def   func(float64) float64
		deriv func(g, y float64) float64
	}{
		{"tanh", Tanh[T], TanhBias[T], TanhGrad[T], math.Tanh, func(g, y float64) float64 { return g * (1 - y*y) }},
		{"sigmoid", Sigmoid[T], SigmoidBias[T], SigmoidGrad[T], func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
			func(g, y float64) float64 { return g * y * (1 - y) }},
	}
	for _, d := range defs {
		for _, n := range []int{1, 7, 15, 16, 17, 33, 100} {
			x := make([]T, n)
			for i := range x {
				x[i] = T(rng.NormFloat64() * 2)
			}
			// Out of place, then in place: the same values, and nothing past n written.
			y := make([]T, n+1)
			y[n] = 42
			d.f(y[:n], x)
			for i := range n {
				if !near(y[i], d.def(float64(x[i]))) {
					t.Fatalf("%s %s n=%d: f(%v) = %v, want %v", path, d.name, n, x[i], y[i], d.def(float64(x[i])))
				}
			}
			if y[n] != 42 {
				t.Fatalf("%s %s n=%d: wrote past the end", path, d.name, n)
			}
			xi := append([]T(nil), x...)
			d.f(xi, xi)
			for i := range n {
				if xi[i] != y[i] {
					t.Fatalf("%s %s n=%d: in place %v, out of place %v", path, d.name, n, xi[i], y[i])
				}
			}
			// Gradient from the output; in place on g too.
			g := make([]T, n)
			for i := range g {
				g[i] = T(rng.NormFloat64())
			}
			dz := make([]T, n+1)
			dz[n] = 42
			d.fg(dz[:n], g, y[:n])
			for i := range n {
				want := d.deriv(float64(g[i]), float64(y[i]))
				if math.Abs(float64(dz[i])-want) > 1e-6*math.Abs(float64(g[i]))+1e-300 {
					t.Fatalf("%s %s' n=%d: %v, want %v", path, d.name, n, dz[i], want)
				}
			}
			if dz[n] != 42 {
				t.Fatalf("%s %s' n=%d: wrote past the end", path, d.name, n)
			}
			d.fg(g, g, y[:n])
			for i := range n {
				if g[i] != dz[i] {
					t.Fatalf("%s %s' n=%d: in place %v, out of place %v", path, d.name, n, g[i], dz[i])
				}
			}
		}
		// Per-column bias over rows, for column counts that do and do not divide the block
		// and one whose repeat exceeds the stack buffer.
		for _, c := range []int{1, 3, 10, 16, 24, 100, 257} {
			rows := 1 + rng.IntN(40)
			x := make([]T, rows*c)
			b := make([]T, c)
			for i := range x {
				x[i] = T(rng.NormFloat64() * 2)
			}
			for i := range b {
				b[i] = T(rng.NormFloat64())
			}
			y := append([]T(nil), x...)
			d.fb(y, b)
			for i := range x {
				want := d.def(float64(x[i] + b[i%c]))
				if !near(y[i], want) {
					t.Fatalf("%s %s bias c=%d: f(%v + %v) = %v, want %v", path, d.name, c, x[i], b[i%c], y[i], want)
				}
			}
		}
	}
}

// TestGeneratedActUpToDate is TestGeneratedKernelsUpToDate for gen_act.go.
func TestGeneratedActUpToDate(t *testing.T) {
	checkGenerated(t, "gen_act.go", "act_amd64.s", "act_coef.go")
}

// BenchmarkActivation compares, per element of 64K float32 values: Tanh, Sigmoid, the
// math.Tanh loop that layers uses today, ReLU, and the tanh backward.
func BenchmarkActivation(b *testing.B) {
	const n = 1 << 16
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 2)
	}
	y := make([]float32, n)
	run := func(name string, f func()) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				f()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
		})
	}
	for _, path := range actPaths() {
		withPath(path, func() {
			run("tanh/"+path, func() { Tanh(y, x) })
			run("sigmoid/"+path, func() { Sigmoid(y, x) })
			run("tanhgrad/"+path, func() { TanhGrad(y, x, x) })
		})
	}
	run("tanh/math.Tanh", func() {
		for i, v := range x {
			y[i] = float32(math.Tanh(float64(v)))
		}
	})
	run("tanhgrad/loop", func() {
		for i, v := range x {
			y[i] = x[i] * (1 - v*v)
		}
	})
	run("relu/loop", func() {
		for i, v := range x {
			y[i] = max(v, 0)
		}
	})
}
