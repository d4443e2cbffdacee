package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/nn"
)

// randomBatch draws pixel values in [0, 1] (what datasets produce) and labels.
func randomBatch(rng *rand.Rand, spec nn.Spec, batch int) ([]float32, []int) {
	n := batch
	for _, s := range spec.InputShape {
		n *= s
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = rng.Float32()
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = rng.IntN(spec.NumClasses)
	}
	return x, labels
}

// perturbedParams gives every parameter, biases included, a non-trivial value.
func perturbedParams(m *nn.Model, rng *rand.Rand) []float64 {
	p := make([]float64, m.NumParams())
	m.Params(p)
	for j := range p {
		p[j] += 0.05 * rng.NormFloat64()
	}
	return p
}

// maxRelDiff is max_j |got_j − want_j| / max_j |want_j|.
func maxRelDiff(got, want []float64) float64 {
	var d, s float64
	for j := range want {
		d = math.Max(d, math.Abs(got[j]-want[j]))
		s = math.Max(s, math.Abs(want[j]))
	}
	return d / s
}

func l2(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

// TestPerExampleGradientsMatchBatchOfOne is the "Done when" check: float64, B = 16, every
// per-example gradient against Gorgonia's gradient of a graph holding that example alone,
// their sum against Gorgonia's gradient of the whole batch, and the clipped sum (flat and
// per-layer, with padding rows) against clipping applied to those reference gradients.
func TestPerExampleGradientsMatchBatchOfOne(t *testing.T) {
	const B = 16
	specs := []nn.Spec{LogisticRegression(), MNISTCNN(ReLU), MNISTCNN(Tanh)}
	for si, spec := range specs {
		t.Run(spec.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(si), 1))
			m, err := nn.New(spec, B, nn.WithDType(nn.Float64), nn.WithSeed(7))
			if err != nil {
				t.Fatal(err)
			}
			params := perturbedParams(m, rng)
			if err := m.SetParams(params); err != nil {
				t.Fatal(err)
			}
			x, labels := randomBatch(rng, spec, B)
			ex := len(x) / B

			refs := make([][]float64, B)
			refNorms := make([]float64, B)
			var refLoss float64
			for i := range B {
				l, g := referenceGradient(t, spec, params, x[i*ex:(i+1)*ex], labels[i:i+1])
				refs[i], refNorms[i] = g, l2(g)
				refLoss += l
			}
			batchLoss, batchGrad := referenceGradient(t, spec, params, x, labels)

			sum := make([]float64, m.NumParams())
			st, err := m.Gradient(nn.Batch{X: x, Labels: labels}, sum)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(st.Loss-batchLoss) > 1e-12*batchLoss || math.Abs(refLoss-batchLoss) > 1e-12*batchLoss {
				t.Errorf("loss %v, Gorgonia batch %v, sum of batch-1 losses %v", st.Loss, batchLoss, refLoss)
			}
			g := make([]float64, m.NumParams())
			refSum := make([]float64, m.NumParams())
			for i := range B {
				if err := m.PerExampleGradient(i, g); err != nil {
					t.Fatal(err)
				}
				if d := maxRelDiff(g, refs[i]); d > 1e-10 {
					t.Fatalf("example %d: per-example gradient differs from the batch-1 graph by %g (relative)", i, d)
				}
				for j, v := range refs[i] {
					refSum[j] += v
				}
			}
			if d := maxRelDiff(sum, batchGrad); d > 1e-10 {
				t.Errorf("summed gradient differs from Gorgonia's batch gradient by %g", d)
			}
			if d := maxRelDiff(refSum, batchGrad); d > 1e-10 {
				t.Errorf("Σ batch-1 gradients differs from Gorgonia's batch gradient by %g", d)
			}

			// Clipped sums, with three padding rows, against the references.
			mask := make([]bool, B)
			for i := range mask {
				mask[i] = i%5 != 3
			}
			sorted := slices.Clone(refNorms)
			sort.Float64s(sorted)
			flatC := sorted[B/2] // half the examples get clipped
			groups := m.ParamLayers()
			perLayer := make([]float64, len(groups))
			for l := range perLayer {
				perLayer[l] = flatC / math.Sqrt(float64(len(groups))) / 2
			}
			layerOf := layerIndex(m)
			for _, rule := range []clipping.Rule{clipping.Flat{C: flatC}, clipping.PerLayer{C: perLayer}} {
				want := make([]float64, m.NumParams())
				for i := range B {
					if !mask[i] {
						continue
					}
					f := referenceFactors(rule, refs[i], layerOf, len(groups))
					for j, v := range refs[i] {
						want[j] += v * f[layerOf[j]]
					}
				}
				got := make([]float64, m.NumParams())
				st, err := m.ClippedGradient(nn.Batch{X: x, Labels: labels, Mask: mask}, rule, got)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxRelDiff(got, want); d > 1e-10 {
					t.Errorf("%T: clipped sum differs from reference by %g", rule, d)
				}
				for i := range B {
					want := refNorms[i]
					if !mask[i] {
						want = 0
					}
					if math.Abs(st.Norms[i]-want) > 1e-10*refNorms[i] {
						t.Errorf("%T: norm %d = %v, want %v", rule, i, st.Norms[i], want)
					}
				}
				if st.Examples != B-3 {
					t.Errorf("Examples = %d, want %d", st.Examples, B-3)
				}
			}
		})
	}
}

// layerIndex maps each flat index to its parametrised layer.
func layerIndex(m *nn.Model) []int {
	groups := m.ParamLayers()
	var out []int
	for _, p := range m.Layout() {
		for g, name := range groups {
			if len(p.Name) > len(name) && p.Name[:len(name)+1] == name+"." {
				for range p.Size() {
					out = append(out, g)
				}
			}
		}
	}
	return out
}

// referenceFactors are the clip factors of gradient g per parametrised layer:
// min(1, C/‖g‖) for flat clipping, min(1, C_l/‖g restricted to layer l‖) per layer.
func referenceFactors(rule clipping.Rule, g []float64, layerOf []int, layers int) []float64 {
	f := make([]float64, layers)
	switch r := rule.(type) {
	case clipping.Flat:
		for l := range f {
			f[l] = math.Min(1, r.C/l2(g))
		}
	case clipping.PerLayer:
		sq := make([]float64, layers)
		for k, v := range g {
			sq[layerOf[k]] += v * v
		}
		for l := range f {
			f[l] = math.Min(1, r.C[l]/math.Sqrt(sq[l]))
		}
	}
	return f
}
