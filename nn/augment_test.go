package nn

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/layers"
)

// groupSpec has every parametrised kind of the native engine: conv, GroupNorm (affine)
// and dense.
func groupSpec() Spec {
	return Spec{Name: "group", InputShape: []int{2, 6, 6}, NumClasses: 4, Layers: []layers.Layer{
		layers.Conv2D{Filters: 3, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}},
		layers.GroupNorm{Groups: 3},
		layers.Tanh{},
		layers.MaxPool2D{Kernel: [2]int{2, 2}},
		layers.Flatten{},
		layers.Dense{Units: 4},
	}}
}

// TestGroupedClippedGradientMatchesBatchOfOne checks augmentation multiplicity against
// brute force on both engines: a batch of K·6 rows in groups of K (K = 2, 3, two padding
// groups) gives Σ_i c_i·mean_k g_{i,k}, where every g_{i,k} is the gradient of one row
// computed by a model of batch size 1 with the same parameters, and c_i = min(1, C/‖mean‖)
// (flat) or per layer.
func TestGroupedClippedGradientMatchesBatchOfOne(t *testing.T) {
	const examples = 6
	real := []bool{true, true, false, true, false, true}
	spec := groupSpec()
	for _, engine := range []Engine{EngineNative, EngineGorgonia} {
		for _, k := range []int{2, 3} {
			batch := k * examples
			m, err := New(spec, batch, WithDType(Float64), WithSeed(uint64(k)), WithEngine(engine))
			if err != nil {
				t.Fatal(err)
			}
			one, err := New(spec, 1, WithDType(Float64), WithEngine(engine))
			if err != nil {
				t.Fatal(err)
			}
			params := make([]float64, m.NumParams())
			m.Params(params)
			rng := rand.New(rand.NewPCG(uint64(k), 5))
			for j := range params { // GroupNorm's γ, β away from 1, 0
				params[j] += 0.3 * rng.NormFloat64()
			}
			if err := m.SetParams(params); err != nil {
				t.Fatal(err)
			}
			if err := one.SetParams(params); err != nil {
				t.Fatal(err)
			}
			if err := m.SetGroupSize(k); err != nil {
				t.Fatal(err)
			}
			x, labels := randomInputs(rng, spec, batch)
			mask := make([]bool, batch)
			for r := range mask {
				mask[r] = real[r/k]
			}
			// Brute force: each row's gradient alone, the mean per example.
			L := m.exampleLen
			layerSizes := make([]int, 0)
			for _, p := range m.layout {
				layerSizes = append(layerSizes, p.Size())
			}
			means := make([][]float64, examples)
			for i := range examples {
				means[i] = make([]float64, m.NumParams())
				for v := range k {
					r := i*k + v
					g := make([]float64, m.NumParams())
					if _, err := one.Gradient(Batch{X: x[r*L : (r+1)*L], Labels: labels[r : r+1]}, g); err != nil {
						t.Fatal(err)
					}
					for j := range g {
						means[i][j] += g[j] / float64(k)
					}
				}
			}
			// Parametrised layers' spans in the flat vector: conv (w, b), groupnorm (γ, β),
			// dense (w, b).
			spans := [][2]int{}
			off := 0
			for l := 0; l < len(layerSizes); l += 2 {
				spans = append(spans, [2]int{off, off + layerSizes[l] + layerSizes[l+1]})
				off += layerSizes[l] + layerSizes[l+1]
			}
			if len(spans) != len(m.ParamLayers()) {
				t.Fatalf("%d spans for layers %v", len(spans), m.ParamLayers())
			}
			// A flat threshold between the real examples' second and third smallest norms,
			// so that some are clipped and some not.
			var realNorms []float64
			for i, g := range means {
				if real[i] {
					realNorms = append(realNorms, l2(g))
				}
			}
			slices.Sort(realNorms)
			cFlat := (realNorms[1] + realNorms[2]) / 2
			perLayer := []float64{cFlat / 2, cFlat / 4, cFlat}
			for _, tc := range []struct {
				name string
				rule clipping.Rule
				c    []float64 // per layer; one entry: flat
			}{
				{"flat", clipping.Flat{C: cFlat}, []float64{cFlat}},
				{"per-layer", clipping.PerLayer{C: perLayer}, perLayer},
			} {
				want := make([]float64, m.NumParams())
				wantNorms := make([]float64, examples)
				clipped := 0
				for i, g := range means {
					if !real[i] {
						continue
					}
					wantNorms[i] = l2(g)
					if len(tc.c) == 1 {
						c := math.Min(1, tc.c[0]/wantNorms[i])
						if c < 1 {
							clipped++
						}
						for j, v := range g {
							want[j] += c * v
						}
						continue
					}
					for l, s := range spans {
						c := math.Min(1, tc.c[l]/l2(g[s[0]:s[1]]))
						for j := s[0]; j < s[1]; j++ {
							want[j] += c * g[j]
						}
					}
				}
				got := make([]float64, m.NumParams())
				st, err := m.ClippedGradient(Batch{X: x, Labels: labels, Mask: mask}, tc.rule, got)
				if err != nil {
					t.Fatal(err)
				}
				what := engine.String() + " " + tc.name
				assertClose(t, what+" clipped gradient", got, want, 1e-10)
				assertClose(t, what+" norms", st.Norms, wantNorms, 1e-10)
				if len(tc.c) == 1 && (st.Clipped != clipped || clipped == 0 || clipped == 4) {
					t.Fatalf("%s: Clipped = %d, want %d, and a mix of clipped and unclipped examples", what, st.Clipped, clipped)
				}
			}
			// The plain gradient is Σ_i mean_k g_{i,k} over the real examples, and
			// PerExampleGradient the mean.
			want := make([]float64, m.NumParams())
			for i, g := range means {
				if real[i] {
					for j, v := range g {
						want[j] += v
					}
				}
			}
			got := make([]float64, m.NumParams())
			if _, err := m.Gradient(Batch{X: x, Labels: labels, Mask: mask}, got); err != nil {
				t.Fatal(err)
			}
			assertClose(t, engine.String()+" sum", got, want, 1e-10)
			if err := m.PerExampleGradient(3, got); err != nil {
				t.Fatal(err)
			}
			assertClose(t, engine.String()+" per-example", got, means[3], 1e-10)
		}
	}
}

func l2(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

func TestSetGroupSizeErrors(t *testing.T) {
	m, err := New(groupSpec(), 6, WithDType(Float64))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{0, -2, 4} {
		if err := m.SetGroupSize(k); !errors.Is(err, ErrBatch) {
			t.Errorf("SetGroupSize(%d): %v, want ErrBatch", k, err)
		}
	}
	if err := m.SetGroupSize(3); err != nil || m.GroupSize() != 3 {
		t.Fatalf("SetGroupSize(3): %v, GroupSize %d", err, m.GroupSize())
	}
	x, labels := randomInputs(rand.New(rand.NewPCG(1, 1)), groupSpec(), 6)
	dst := make([]float64, m.NumParams())
	mixed := []bool{true, true, false, false, false, false}
	if _, err := m.ClippedGradient(Batch{X: x, Labels: labels, Mask: mixed}, clipping.Flat{C: 1}, dst); !errors.Is(err, clipping.ErrShape) {
		t.Errorf("a group mixing real and padding rows: %v, want ErrShape", err)
	}
}
