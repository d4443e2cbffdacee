//go:build linux

package layers

import (
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"syscall"
	"testing"
	"unsafe"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/cpupath"
	"github.com/privtrain/privtrain/internal/num"
)

// readOnly returns x's values in memory mapped read-only: a write to it faults, which
// debug.SetPanicOnFault turns into a panic of the writing goroutine (and which is fatal in
// the others).
func readOnly(t *testing.T, x []float32) []float32 {
	t.Helper()
	page := syscall.Getpagesize()
	n := (len(x)*4 + page - 1) / page * page
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	ro := unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), len(x))
	copy(ro, x)
	if err := syscall.Mprotect(mem, syscall.PROT_READ); err != nil {
		t.Fatal(err)
	}
	return ro
}

// readInputStacks are networks whose first op reads the input in each way an op or a tap
// can: besides the nativeStacks (their image input is first transposed to NHWC), a
// residual fork (its shortcut reads the input again in the join), a GroupNorm, and after
// parameter-free layers (NewNativeAfter: skip > 0, Input is in Native's layout) a Dense's
// In through a Flatten's alias, a convolution's patches and a Winograd convolution's
// per-example gradient.
var readInputStacks = []struct {
	name string
	in   []int
	ls   []Layer
	skip int
}{
	{"winograd", []int{192, 4, 4}, []Layer{
		Conv2D{Filters: 5, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, ReLU{}, Flatten{}, Dense{Units: 3}}, 0},
	{"after-groupnorm-winograd", []int{192, 4, 4}, []Layer{GroupNorm{Groups: 3, NoAffine: true},
		Conv2D{Filters: 5, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, ReLU{}, Flatten{}, Dense{Units: 3}}, 1},
	{"residual-first", []int{3, 5, 5}, []Layer{
		Residual{Body: []Layer{Conv2D{Filters: 3, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, ReLU{},
			Conv2D{Filters: 3, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}}},
		ReLU{}, GlobalAvgPool2D{}, Flatten{}, Dense{Units: 3}}, 0},
	{"groupnorm-wsconv", []int{4, 5, 5}, []Layer{
		GroupNorm{Groups: 2}, ReLU{}, WSConv2D(Conv2D{Filters: 3, Kernel: [2]int{3, 3}}), Flatten{}, Dense{Units: 3}}, 0},
	{"after-groupnorm", []int{6, 3, 3}, []Layer{GroupNorm{Groups: 2, NoAffine: true}, Flatten{}, Dense{Units: 4}}, 2},
	{"after-groupnorm-conv", []int{6, 3, 3}, []Layer{
		GroupNorm{Groups: 3, NoAffine: true}, ReLU{}, Conv2D{Filters: 2, Kernel: [2]int{2, 2}}, Flatten{}, Dense{Units: 4}}, 2},
}

// TestNativeReadInput: a program that reads the caller's rows in place (ReadInput) gives
// bit for bit the logits of the real rows, the clipped sum, the plain sum and the
// per-example gradients of the same program reading a copy in Input with zero padding
// rows, on every CPU path, although the caller's memory is read-only (a write would
// fault) and its padding rows hold NaN, ±Inf and the largest float32; ReadInput(nil)
// reads Input again, and Input is never moved.
func TestNativeReadInput(t *testing.T) {
	const b = 7
	mask := []bool{true, false, true, true, false, true, false}
	type stack = struct {
		name string
		in   []int
		ls   []Layer
		skip int
	}
	stacks := slices.Clone(readInputStacks)
	for _, st := range nativeStacks {
		stacks = append(stacks, stack{st.name, st.in, st.ls, 0})
	}
	for si, st := range stacks {
		for _, p := range cpupath.Supported() {
			t.Run(st.name+"/"+p.String(), func(t *testing.T) {
				defer cpupath.Force(p)()
				rng := rand.New(rand.NewPCG(uint64(si), 11))
				params, cur := randomParams32(rng, st.ls, st.in)
				K := num.Prod(cur)
				r := toFloat32(randomValues(rng, b*K))
				build := func() *Native[float32] {
					nv, err := NewNativeAfter(st.ls, st.in, b, params, true, st.skip)
					if err != nil {
						t.Fatal(err)
					}
					nv.Prepare()
					return nv
				}
				copied := build()
				L := copied.InputLen()
				x := toFloat32(randomValues(rng, b*L))
				hostile := slices.Clone(x)
				for i, real := range mask {
					if !real {
						clear(x[i*L : (i+1)*L])
						for j := range L {
							hostile[i*L+j] = []float32{float32(math.NaN()), float32(math.Inf(1)),
								float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32}[(i+j)%5]
						}
					}
				}
				copy(copied.Input(), x)
				want := results(t, copied, mask, r, K)

				inPlace := build()
				own := inPlace.Input()
				ro := readOnly(t, hostile)
				inPlace.ReadInput(ro)
				if &inPlace.Input()[0] != &own[0] {
					t.Fatal("ReadInput moved Input")
				}
				got := func() (got runResults) {
					// SetPanicOnFault is per goroutine: Forward and Backward run on this one;
					// a write from the workspace's goroutines would be a fatal fault instead.
					defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
					defer func() {
						if e := recover(); e != nil {
							t.Fatalf("reading the input in place wrote it: %v", e)
						}
					}()
					return results(t, inPlace, mask, r, K)
				}()
				want.compare(t, "in place", got)
				if slices.ContainsFunc(own, func(v float32) bool { return v != 0 }) {
					t.Error("a program reading in place wrote its Input")
				}

				// Back to its own Input, which now holds the copy.
				inPlace.ReadInput(nil)
				copy(inPlace.Input(), x)
				want.compare(t, "Input again", results(t, inPlace, mask, r, K))
			})
		}
	}
}

type runResults struct {
	logits       []float32
	clipped, sum []float64
	perExample   [][]float64
}

// results runs nv over the batch in chunks with the loss gradient r and returns the
// logits of the real rows of mask, the clipped and plain sums of the taps and the
// per-example gradients of the real rows.
func results(t *testing.T, nv *Native[float32], mask []bool, r []float32, K int) runResults {
	t.Helper()
	b := len(mask)
	for lo := 0; lo < b; lo += nv.Chunk() {
		hi := min(lo+nv.Chunk(), b)
		nv.Forward(0, lo, hi)
		nv.Backward(0, lo, hi, r[lo*K:hi*K])
	}
	var res runResults
	for i, real := range mask {
		if real {
			res.logits = append(res.logits, nv.Logits()[i*K:(i+1)*K]...)
		}
	}
	ws, err := clipping.NewWorkspace(nv.Taps(), b)
	if err != nil {
		t.Fatal(err)
	}
	c := make([]float64, ws.NumParams())
	if _, err := ws.ClippedSum(mask, clipping.Flat{C: 0.5}, c); err != nil {
		t.Fatal(err)
	}
	s := make([]float64, ws.NumParams())
	if err := ws.Sum(mask, s); err != nil {
		t.Fatal(err)
	}
	res.clipped, res.sum = c, s
	for i, real := range mask {
		if real {
			g := make([]float64, ws.NumParams())
			if err := ws.PerExample(i, g); err != nil {
				t.Fatal(err)
			}
			res.perExample = append(res.perExample, g)
		}
	}
	return res
}

func (want runResults) compare(t *testing.T, what string, got runResults) {
	t.Helper()
	// slices.Equal: a NaN anywhere fails, as it should.
	if !slices.Equal(got.logits, want.logits) {
		t.Errorf("%s: logits of the real rows differ", what)
	}
	if !slices.Equal(got.clipped, want.clipped) || !slices.Equal(got.sum, want.sum) {
		t.Errorf("%s: clipped or plain sum differs", what)
	}
	for q := range want.perExample {
		if !slices.Equal(got.perExample[q], want.perExample[q]) {
			t.Errorf("%s: per-example gradient %d differs", what, q)
		}
	}
}
