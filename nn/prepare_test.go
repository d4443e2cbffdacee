package nn

import (
	"math"
	"math/rand/v2"
	"testing"
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
