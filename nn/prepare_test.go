package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/layers"
)

// TestParamsReachEveryCall checks that the native engine, which re-reads the parameters
// into its packed copies (transposed and permuted weights) only after SetParams, sees every
// change: after each SetParams, repeated steps and evaluations of the tiny CNN (every
// layer kind, both packed copies of Conv2D used) agree with the Gorgonia engine on the
// same parameters.
func TestParamsReachEveryCall(t *testing.T) {
	const B = 3
	spec := tinyCNN()
	native, err := New(spec, B, WithDType(Float64), WithSeed(2), WithEngine(EngineNative))
	if err != nil {
		t.Fatal(err)
	}
	graph, err := New(spec, B, WithDType(Float64), WithSeed(2), WithEngine(EngineGorgonia))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	x, labels := randomInputs(rng, spec, B)
	b := Batch{X: x, Labels: labels}
	p := make([]float64, native.NumParams())
	native.Params(p)
	for round := range 3 {
		if err := graph.SetParams(p); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(p))
		wantSt, err := graph.Gradient(b, want)
		if err != nil {
			t.Fatal(err)
		}
		for call := range 2 { // the second call reuses the packed parameters
			got := make([]float64, len(p))
			st, err := native.Gradient(b, got)
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, "gradient", got, want, 1e-12)
			loss, _, err := native.Evaluate(b)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(st.Loss-wantSt.Loss) > 1e-12*wantSt.Loss || math.Abs(loss-wantSt.Loss) > 1e-12*wantSt.Loss {
				t.Fatalf("round %d call %d: step loss %v, evaluation %v, Gorgonia %v", round, call, st.Loss, loss, wantSt.Loss)
			}
		}
		for j := range p {
			p[j] += rng.NormFloat64() / 4
		}
		if err := native.SetParams(p); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWideClipChunksAgree holds the clipped sum of a network whose clipping chunk is wider
// than the native program's (a 327k-parameter Dense after a conv whose patches fill the
// cache: fill runs Native in pieces and the clipping rebuilds the patches that are no
// longer in a worker's scratch) to the Gorgonia engine's, float64, with padding rows.
func TestWideClipChunksAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("a 64×64 convolution on Gorgonia")
	}
	const B = 11
	spec := Spec{Name: "wide", InputShape: []int{1, 64, 64}, NumClasses: 5, Layers: []layers.Layer{
		layers.Conv2D{Filters: 16, Kernel: [2]int{5, 5}, Padding: [2]int{2, 2}},
		layers.Tanh{},
		layers.Flatten{},
		layers.Dense{Units: 5},
	}}
	native, err := New(spec, B, WithDType(Float64), WithSeed(4), WithEngine(EngineNative))
	if err != nil {
		t.Fatal(err)
	}
	net := native.net.(*nativeNet[float64])
	if net.ws.ChunkRows() <= net.train.Chunk() {
		t.Fatalf("clipping chunk %d rows, native chunk %d: the test needs a wider clipping chunk", net.ws.ChunkRows(), net.train.Chunk())
	}
	graph, err := New(spec, B, WithDType(Float64), WithSeed(4), WithEngine(EngineGorgonia))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	p := make([]float64, native.NumParams())
	native.Params(p)
	for j := range p {
		p[j] += rng.NormFloat64() / 20
	}
	for _, m := range []*Model{native, graph} {
		if err := m.SetParams(p); err != nil {
			t.Fatal(err)
		}
	}
	x, labels := randomInputs(rng, spec, B)
	mask := make([]bool, B)
	for i := range mask {
		mask[i] = i != 3 && i < 9 // a gap and two padding rows at the end
	}
	b := Batch{X: x, Labels: labels, Mask: mask}
	rule := clipping.Flat{C: 0.05}
	got, want := make([]float64, len(p)), make([]float64, len(p))
	sg, err := native.ClippedGradient(b, rule, got)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := graph.ClippedGradient(b, rule, want)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "clipped sum", got, want, 1e-10)
	assertClose(t, "norms", sg.Norms, sw.Norms, 1e-10)
	if sg.Clipped != sw.Clipped || sg.Clipped == 0 {
		t.Fatalf("clipped %d examples, Gorgonia %d (want the same, > 0)", sg.Clipped, sw.Clipped)
	}
}
