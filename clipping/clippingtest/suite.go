package clippingtest

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
	"gonum.org/v1/gonum/floats"
)

// Run runs the whole suite on k, one subtest per property. The layout subtests run only
// for the layouts k supports: NativeLayoutMatchesReference and the grouped sums' native
// layout for any of them, PatchesStandInForIn for Patches, BadInOrder for InOrder.
func Run(t *testing.T, k Kinds) {
	if k.F64 == nil || k.F32 == nil {
		t.Fatal("clippingtest.Run: the kind needs both F64 and F32")
	}
	for _, c := range []struct {
		name string
		run  func(*testing.T, Kinds)
		when bool
	}{
		{"PerExampleMatchesChainRule", perExampleMatchesChainRule, true},
		{"ClippedSumMatchesReference", clippedSumMatchesReference, true},
		{"SumMatchesReference", sumMatchesReference, true},
		{"ClippedContributionProperties", clippedContributionProperties, true},
		{"PaddingRowsContributeExactlyZero", paddingRowsContributeExactlyZero, true},
		{"ClippedSumAccumulates", clippedSumAccumulates, true},
		{"Float32AgreesWithFloat64", float32AgreesWithFloat64, true},
		{"WorkspaceErrors", workspaceErrors, true},
		{"GroupedClippedSumMatchesReference", groupedClippedSumMatchesReference, true},
		{"GroupedPaddingContributesNothing", groupedPaddingContributesNothing, true},
		{"GroupedFill", groupedFill, true},
		{"GroupSizeErrors", groupSizeErrors, true},
		{"GroupedFloat32ClippedNormAtMostC", groupedFloat32ClippedNormAtMostC, true},
		{"FillCoversBatchAndMatchesPrefilled", fillCoversBatchAndMatchesPrefilled, true},
		{"FillErrorLeavesDstUntouched", fillErrorLeavesDstUntouched, true},
		{"ReproducibleAcrossCores", reproducibleAcrossCores, true},
		{"Float32ClippedNormNeverExceedsC", float32ClippedNormNeverExceedsC, true},
		{"Float32NearCNeverExceedsC", float32NearCNeverExceedsC, true},
		{"NativeLayoutMatchesReference", nativeLayoutMatchesReference, k.Layouts.any()},
		{"PatchesStandInForIn", patchesStandInForIn, k.Layouts.Patches},
		{"BadInOrder", badInOrder, k.Layouts.InOrder},
	} {
		if c.when {
			t.Run(c.name, func(t *testing.T) { c.run(t, k) })
		}
	}
}

func newWorkspace[T num.Float](t *testing.T, k Kinds, taps []Layer[T], batch int) *clipping.Workspace[T] {
	t.Helper()
	w, err := clipping.NewWorkspace(Gradients(k, taps), batch)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// clippedSum is w's clipped sum under rule (through fill when it is not nil) in a fresh
// slice, and its stats; an error fails t.
func clippedSum[T num.Float](t *testing.T, w *clipping.Workspace[T], mask []bool, rule clipping.Rule, fill clipping.Filler) ([]float64, clipping.Stats) {
	t.Helper()
	dst := make([]float64, w.NumParams())
	st, err := w.ClippedSumFill(mask, rule, dst, fill)
	if err != nil {
		t.Fatal(err)
	}
	return dst, st
}

// plainSum is w's plain sum (through fill when it is not nil) in a fresh slice.
func plainSum[T num.Float](t *testing.T, w *clipping.Workspace[T], mask []bool, fill clipping.Filler) []float64 {
	t.Helper()
	dst := make([]float64, w.NumParams())
	if err := w.SumFill(mask, dst, fill); err != nil {
		t.Fatal(err)
	}
	return dst
}

// perExample is w's gradient of example i in a fresh slice.
func perExample[T num.Float](t *testing.T, w *clipping.Workspace[T], i int) []float64 {
	t.Helper()
	dst := make([]float64, w.NumParams())
	if err := w.PerExample(i, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// CheckPerExample checks w's per-example gradients against the brute force of the
// reference-layout layers ref, to rel·‖want‖.
func CheckPerExample[T num.Float](t *testing.T, w *clipping.Workspace[T], ref []Layer[float64], rel float64) {
	t.Helper()
	for i := range w.Batch() {
		AssertClose(t, "per-example gradient "+strconv.Itoa(i), perExample(t, w, i), slices.Concat(BruteGradient(ref, i)...), rel)
	}
}

// randomThresholds draws a flat threshold in [0.05, 1.05) and per-layer ones in
// [0.01, 1.01).
func randomThresholds(rng *rand.Rand, layers int) (c float64, perLayer []float64) {
	c = 0.05 + rng.Float64()
	perLayer = make([]float64, layers)
	for l := range perLayer {
		perLayer[l] = 0.01 + rng.Float64()
	}
	return c, perLayer
}

// ruleCase is a rule and what ReferenceClippedSum needs to apply it.
type ruleCase struct {
	name     string
	rule     clipping.Rule
	perLayer []float64
	flat     float64
}

// flatAndPerLayer are a flat rule of threshold c and a per-layer one for specs.
func flatAndPerLayer(c float64) []ruleCase {
	perLayer := []float64{0.5, 0.2, 1, 0.05}
	return []ruleCase{{"flat", clipping.Flat{C: c}, nil, c}, {"per-layer", clipping.PerLayer{C: perLayer}, perLayer, 0}}
}

func perExampleMatchesChainRule(t *testing.T, k Kinds) {
	const batch = 5
	rng := rand.New(rand.NewPCG(1, 2))
	taps := RandomLayers[float64](rng, specs, batch)
	CheckPerExample(t, newWorkspace(t, k, taps, batch), taps, 1e-13)
}

func clippedSumMatchesReference(t *testing.T, k Kinds) {
	const batch = 7
	rng := rand.New(rand.NewPCG(3, 4))
	taps := RandomLayers[float64](rng, specs, batch)
	w := newWorkspace(t, k, taps, batch)
	mask := []bool{true, false, true, true, true, false, true}
	for _, tc := range flatAndPerLayer(1) {
		t.Run(tc.name, func(t *testing.T) {
			want, wantNorms := ReferenceClippedSum(taps, batch, mask, tc.perLayer, tc.flat)
			got, st := clippedSum(t, w, mask, tc.rule, nil)
			AssertClose(t, "clipped sum", got, want, 1e-13)
			AssertClose(t, "norms", st.Norms, wantNorms, 1e-13)
			clippedWant := 0
			for i, n := range wantNorms {
				if mask[i] && tc.perLayer == nil && n > tc.flat {
					clippedWant++
				}
			}
			if tc.perLayer == nil && st.Clipped != clippedWant {
				t.Errorf("Clipped = %d, want %d", st.Clipped, clippedWant)
			}
			if tc.perLayer == nil && (clippedWant == 0 || clippedWant == 5) {
				t.Fatalf("test data should mix clipped and unclipped examples; %d of 5 clipped", clippedWant)
			}
		})
	}
}

func sumMatchesReference(t *testing.T, k Kinds) {
	const batch = 6
	rng := rand.New(rand.NewPCG(5, 6))
	taps := RandomLayers[float64](rng, specs, batch)
	w := newWorkspace(t, k, taps, batch)
	for _, mask := range [][]bool{nil, {false, true, true, false, true, true}} {
		want, _ := ReferenceClippedSum(taps, batch, mask, nil, math.Inf(1))
		AssertClose(t, "sum", plainSum(t, w, mask, nil), want, 1e-13)
	}
}

// clippedContributionProperties checks, one example at a time (a mask with a single real
// row isolates its contribution c_i·g_i): the norm is at most C·(1+1e-6); an example with
// norm below C passes through unchanged; under per-layer clipping each layer's part is at
// most C_l and the whole at most sqrt(Σ C_l²).
func clippedContributionProperties(t *testing.T, k Kinds) {
	for trial := range 20 {
		rng := rand.New(rand.NewPCG(uint64(trial), 99))
		const batch = 6
		t.Run("float64", func(t *testing.T) {
			checkContributions(t, k, RandomLayers[float64](rng, specs, batch), batch, rng, 1e-15)
		})
		t.Run("float32", func(t *testing.T) {
			checkContributions(t, k, RandomLayers[float32](rng, specs, batch), batch, rng, 1e-6)
		})
	}
}

func checkContributions[T num.Float](t *testing.T, k Kinds, taps []Layer[T], batch int, rng *rand.Rand, untouchedTol float64) {
	w := newWorkspace(t, k, taps, batch)
	c, perLayer := randomThresholds(rng, len(taps))
	for i := range batch {
		g := perExample(t, w, i)
		got, _ := clippedSum(t, w, oneRow(batch, i), clipping.Flat{C: c}, nil)
		n := floats.Norm(got, 2)
		if n > c*(1+1e-6) {
			t.Fatalf("example %d: clipped norm %v > C = %v", i, n, c)
		}
		if floats.Norm(g, 2) < c {
			AssertClose(t, "untouched contribution", got, g, untouchedTol)
			if untouchedTol < 1e-10 {
				for j := range g {
					if got[j] != g[j] {
						t.Fatalf("example %d below C changed at %d: %v != %v", i, j, got[j], g[j])
					}
				}
			}
		}
		rule := clipping.PerLayer{C: perLayer}
		got, _ = clippedSum(t, w, oneRow(batch, i), rule, nil)
		for l, part := range layerParts(taps, got) {
			if n := floats.Norm(part, 2); n > perLayer[l]*(1+1e-6) {
				t.Fatalf("example %d layer %d: clipped norm %v > C_l = %v", i, l, n, perLayer[l])
			}
		}
		if n := floats.Norm(got, 2); n > rule.Bound()*(1+1e-6) {
			t.Fatalf("example %d: per-layer clipped norm %v > sqrt(ΣC_l²) = %v", i, n, rule.Bound())
		}
	}
}

// paddingRowsContributeExactlyZero fills the padding rows with NaN and huge values and
// checks that the result is bit-for-bit that of a batch holding only the real rows.
func paddingRowsContributeExactlyZero(t *testing.T, k Kinds) {
	const batch = 6
	mask := []bool{true, false, true, false, false, true}
	for _, fill := range []float64{math.NaN(), 1e30, 0} {
		rng := rand.New(rand.NewPCG(7, 8))
		taps := RandomLayers[float64](rng, specs, batch)
		var real []int
		for i, m := range mask {
			if m {
				real = append(real, i)
			}
		}
		compact := make([]Layer[float64], len(taps))
		for l, tp := range taps {
			in, gz := len(tp.In)/batch, len(tp.GradZ)/batch
			c := tp
			c.In, c.GradZ = nil, nil
			for _, i := range real {
				c.In = append(c.In, tp.In[i*in:(i+1)*in]...)
				c.GradZ = append(c.GradZ, tp.GradZ[i*gz:(i+1)*gz]...)
			}
			compact[l] = c
			for i, m := range mask {
				if !m {
					for j := i * in; j < (i+1)*in; j++ {
						tp.In[j] = fill
					}
					for j := i * gz; j < (i+1)*gz; j++ {
						tp.GradZ[j] = fill
					}
				}
			}
		}
		padded := newWorkspace(t, k, taps, batch)
		small := newWorkspace(t, k, compact, len(real))
		for _, rule := range []clipping.Rule{clipping.Flat{C: 0.3}, clipping.PerLayerEqual(0.3, len(taps))} {
			got, st := clippedSum(t, padded, mask, rule, nil)
			for i, m := range mask {
				if !m && st.Norms[i] != 0 {
					t.Errorf("padding row %d has norm %v, want 0", i, st.Norms[i])
				}
			}
			want, _ := clippedSum(t, small, nil, rule, nil)
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("fill %v, rule %T: entry %d = %v with padding, %v without", fill, rule, j, got[j], want[j])
				}
			}
			got, want = plainSum(t, padded, mask, nil), plainSum(t, small, nil, nil)
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("fill %v: Sum entry %d = %v with padding, %v without", fill, j, got[j], want[j])
				}
			}
		}
	}
}

func clippedSumAccumulates(t *testing.T, k Kinds) {
	const batch = 4
	rng := rand.New(rand.NewPCG(9, 10))
	taps := RandomLayers[float64](rng, specs, batch)
	w := newWorkspace(t, k, taps, batch)
	once := make([]float64, w.NumParams())
	twice := make([]float64, w.NumParams())
	if _, err := w.ClippedSum(nil, clipping.Flat{C: 0.5}, once); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := w.ClippedSum(nil, clipping.Flat{C: 0.5}, twice); err != nil {
			t.Fatal(err)
		}
	}
	for j := range once {
		once[j] *= 2
	}
	// Summation order differs (the second call adds onto the first), so not bit-for-bit.
	AssertClose(t, "two accumulated calls", twice, once, 1e-15)
}

func float32AgreesWithFloat64(t *testing.T, k Kinds) {
	const batch = 5
	t64 := RandomLayers[float64](rand.New(rand.NewPCG(11, 12)), specs, batch)
	t32 := RandomLayers[float32](rand.New(rand.NewPCG(11, 12)), specs, batch)
	// Round the float64 layers to float32 so both see the same inputs.
	for l := range t64 {
		for j := range t64[l].In {
			t64[l].In[j] = float64(t32[l].In[j])
		}
		for j := range t64[l].GradZ {
			t64[l].GradZ[j] = float64(t32[l].GradZ[j])
		}
	}
	g64, s64 := clippedSum(t, newWorkspace(t, k, t64, batch), nil, clipping.Flat{C: 0.2}, nil)
	g32, s32 := clippedSum(t, newWorkspace(t, k, t32, batch), nil, clipping.Flat{C: 0.2}, nil)
	AssertClose(t, "float32 clipped sum", g32, g64, 1e-5)
	AssertClose(t, "float32 norms", s32.Norms, s64.Norms, 1e-5)
}

func workspaceErrors(t *testing.T, k Kinds) {
	const batch = 3
	rng := rand.New(rand.NewPCG(13, 14))
	taps := RandomLayers[float64](rng, specs, batch)
	w := newWorkspace(t, k, taps, batch)
	d := w.NumParams()
	clipped := func(mask []bool, rule clipping.Rule, dst []float64) error {
		_, err := w.ClippedSum(mask, rule, dst)
		return err
	}
	for _, tc := range []struct {
		name string
		call func(dst []float64) error
		want error
	}{
		{"short dst", func([]float64) error { return clipped(nil, clipping.Flat{C: 1}, make([]float64, d-1)) }, clipping.ErrShape},
		{"mask length", func(dst []float64) error { return clipped([]bool{true}, clipping.Flat{C: 1}, dst) }, clipping.ErrShape},
		{"zero C", func(dst []float64) error { return clipped(nil, clipping.Flat{C: 0}, dst) }, clipping.ErrRule},
		{"NaN C", func(dst []float64) error { return clipped(nil, clipping.Flat{C: math.NaN()}, dst) }, clipping.ErrRule},
		{"infinite C", func(dst []float64) error { return clipped(nil, clipping.Flat{C: math.Inf(1)}, dst) }, clipping.ErrRule},
		{"nil rule", func(dst []float64) error { return clipped(nil, nil, dst) }, clipping.ErrRule},
		{"per-layer count", func(dst []float64) error { return clipped(nil, clipping.PerLayer{C: []float64{1, 1}}, dst) }, clipping.ErrRule},
		{"per-layer negative", func(dst []float64) error {
			return clipped(nil, clipping.PerLayer{C: []float64{1, 1, -1, 1}}, dst)
		}, clipping.ErrRule},
		{"sum short dst", func([]float64) error { return w.Sum(nil, make([]float64, d+1)) }, clipping.ErrShape},
		{"per-example index", func(dst []float64) error { return w.PerExample(batch, dst) }, clipping.ErrShape},
	} {
		dst := make([]float64, d)
		if err := tc.call(dst); !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
		for _, v := range dst {
			if v != 0 {
				t.Fatalf("%s: failed call wrote into dst", tc.name)
			}
		}
	}

	// A NaN in a real row is an error that leaves dst untouched.
	taps[2].GradZ[0] = math.NaN()
	dst := make([]float64, d)
	if _, err := w.ClippedSum(nil, clipping.Flat{C: 1}, dst); !errors.Is(err, clipping.ErrNonFinite) {
		t.Fatalf("NaN gradient: error %v, want ErrNonFinite", err)
	}
	for _, v := range dst {
		if v != 0 {
			t.Fatal("NaN gradient: dst written")
		}
	}
	// ... but not in a padding row.
	if _, err := w.ClippedSum([]bool{false, true, true}, clipping.Flat{C: 1}, dst); err != nil {
		t.Fatalf("NaN in padding row: %v", err)
	}

	bad := []struct {
		name  string
		taps  []Layer[float64]
		batch int
	}{
		{"no layers", nil, 3},
		{"zero batch", taps, 0},
		{"short input", []Layer[float64]{{Kind: Dense, InDim: 2, OutDim: 2, In: make([]float64, 3), GradZ: make([]float64, 4)}}, 2},
		{"short grad", []Layer[float64]{{Kind: Conv, InDim: 2, OutDim: 2, Positions: 3, In: make([]float64, 12), GradZ: make([]float64, 11)}}, 2},
		{"bad kind", []Layer[float64]{{Kind: Kind(7), InDim: 1, OutDim: 1, In: make([]float64, 1), GradZ: make([]float64, 1)}}, 1},
		{"zero positions", []Layer[float64]{{Kind: Conv, InDim: 1, OutDim: 1, In: nil, GradZ: nil}}, 1},
	}
	for _, tc := range bad {
		if _, err := clipping.NewWorkspace(Gradients(k, tc.taps), tc.batch); !errors.Is(err, clipping.ErrShape) {
			t.Errorf("NewWorkspace %s: error %v, want ErrShape", tc.name, err)
		}
	}
}
