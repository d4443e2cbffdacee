package clipping

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/internal/num"
)

// tapSpec describes one random layer of a test network.
type tapSpec struct {
	kind                     testKind
	inDim, outDim, positions int
	bias                     bool
}

var testSpecs = []tapSpec{
	{convKind, 6, 3, 7, true},
	{convKind, 4, 2, 5, false},
	{denseKind, 9, 4, 1, true},
	{denseKind, 4, 3, 1, false},
}

// randomTaps draws taps whose per-example scales spread over three orders of magnitude, so
// that with C = 1 some examples are clipped and some are not.
func randomTaps[T num.Float](rng *rand.Rand, specs []tapSpec, batch int) []Tap[T] {
	scale := make([]float64, batch)
	for i := range scale {
		scale[i] = math.Pow(10, -2+3*rng.Float64())
	}
	taps := make([]Tap[T], len(specs))
	for l, s := range specs {
		p := max(s.positions, 1)
		t := Tap[T]{Kind: s.kind, InDim: s.inDim, OutDim: s.outDim, Positions: s.positions, Bias: s.bias,
			In: make([]T, batch*p*s.inDim), GradZ: make([]T, batch*s.outDim*p)}
		for j := range t.In {
			t.In[j] = T(rng.NormFloat64())
		}
		per := s.outDim * p
		for j := range t.GradZ {
			t.GradZ[j] = T(scale[j/per] * rng.NormFloat64() / 4)
		}
		taps[l] = t
	}
	return taps
}

// bruteGradient is example i's gradient written out from the chain rule, loop by loop.
func bruteGradient[T num.Float](taps []Tap[T], i int) [][]float64 {
	out := make([][]float64, len(taps))
	for l, t := range taps {
		F, k := t.OutDim, t.InDim
		g := make([]float64, t.NumParams())
		switch t.Kind {
		case denseKind:
			for a := range k {
				for o := range F {
					g[a*F+o] = float64(t.In[i*k+a]) * float64(t.GradZ[i*F+o])
				}
			}
			if t.Bias {
				for o := range F {
					g[k*F+o] = float64(t.GradZ[i*F+o])
				}
			}
		case convKind:
			P := t.Positions
			for f := range F {
				for j := range k {
					var s float64
					for p := range P {
						s += float64(t.GradZ[(i*F+f)*P+p]) * float64(t.In[(i*P+p)*k+j])
					}
					g[f*k+j] = s
				}
				if t.Bias {
					var s float64
					for p := range P {
						s += float64(t.GradZ[(i*F+f)*P+p])
					}
					g[F*k+f] = s
				}
			}
		}
		out[l] = g
	}
	return out
}

func norm(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

func concat(parts [][]float64) []float64 {
	var out []float64
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func assertClose(t *testing.T, what string, got, want []float64, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	scale := norm(want)
	for j := range got {
		if d := math.Abs(got[j] - want[j]); d > rel*scale || math.IsNaN(got[j]) {
			t.Fatalf("%s[%d] = %v, want %v (|diff| %g > %g·‖want‖ = %g)", what, j, got[j], want[j], d, rel, rel*scale)
		}
	}
}

func newWorkspace[T num.Float](t *testing.T, taps []Tap[T], batch int) *Workspace[T] {
	t.Helper()
	w, err := NewWorkspace(gradients(taps), batch)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestPerExampleMatchesChainRule(t *testing.T) {
	const batch = 5
	rng := rand.New(rand.NewPCG(1, 2))
	taps := randomTaps[float64](rng, testSpecs, batch)
	w := newWorkspace(t, taps, batch)
	got := make([]float64, w.NumParams())
	for i := range batch {
		if err := w.PerExample(i, got); err != nil {
			t.Fatal(err)
		}
		assertClose(t, "per-example gradient", got, concat(bruteGradient(taps, i)), 1e-13)
	}
}

// referenceClippedSum applies the clipping rule of the seeds digest §0.4 to brute-force
// per-example gradients.
func referenceClippedSum(taps []Tap[float64], batch int, mask []bool, perLayer []float64, flat float64) (sum, norms []float64) {
	norms = make([]float64, batch)
	for i := range batch {
		if mask != nil && !mask[i] {
			continue
		}
		parts := bruteGradient(taps, i)
		g := concat(parts)
		norms[i] = norm(g)
		if perLayer == nil {
			c := math.Min(1, flat/norms[i])
			for j := range g {
				g[j] *= c
			}
		} else {
			g = nil
			for l, p := range parts {
				c := math.Min(1, perLayer[l]/norm(p))
				for _, v := range p {
					g = append(g, c*v)
				}
			}
		}
		if sum == nil {
			sum = make([]float64, len(g))
		}
		for j := range g {
			sum[j] += g[j]
		}
	}
	return sum, norms
}

func TestClippedSumMatchesReference(t *testing.T) {
	const batch = 7
	rng := rand.New(rand.NewPCG(3, 4))
	taps := randomTaps[float64](rng, testSpecs, batch)
	w := newWorkspace(t, taps, batch)
	mask := []bool{true, false, true, true, true, false, true}
	for _, tc := range []struct {
		name     string
		rule     Rule
		perLayer []float64
		flat     float64
	}{
		{"flat", Flat{C: 1}, nil, 1},
		{"per-layer", PerLayer{C: []float64{0.5, 0.2, 1, 0.05}}, []float64{0.5, 0.2, 1, 0.05}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantNorms := referenceClippedSum(taps, batch, mask, tc.perLayer, tc.flat)
			got := make([]float64, w.NumParams())
			st, err := w.ClippedSum(mask, tc.rule, got)
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, "clipped sum", got, want, 1e-13)
			assertClose(t, "norms", st.Norms, wantNorms, 1e-13)
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

func TestSumMatchesReference(t *testing.T) {
	const batch = 6
	rng := rand.New(rand.NewPCG(5, 6))
	taps := randomTaps[float64](rng, testSpecs, batch)
	w := newWorkspace(t, taps, batch)
	for _, mask := range [][]bool{nil, {false, true, true, false, true, true}} {
		want, _ := referenceClippedSum(taps, batch, mask, nil, math.Inf(1))
		got := make([]float64, w.NumParams())
		if err := w.Sum(mask, got); err != nil {
			t.Fatal(err)
		}
		assertClose(t, "sum", got, want, 1e-13)
	}
}

// oneRow is a mask with only row i real.
func oneRow(batch, i int) []bool {
	m := make([]bool, batch)
	m[i] = true
	return m
}

// TestClippedContributionProperties checks, one example at a time (a mask with a single
// real row isolates its contribution c_i·g_i): the norm is at most C·(1+1e-6); an example
// with norm below C passes through unchanged; under per-layer clipping each layer's part is
// at most C_l and the whole at most sqrt(Σ C_l²).
func TestClippedContributionProperties(t *testing.T) {
	for trial := range 20 {
		rng := rand.New(rand.NewPCG(uint64(trial), 99))
		const batch = 6
		t.Run("float64", func(t *testing.T) {
			checkContributions(t, randomTaps[float64](rng, testSpecs, batch), batch, rng, 1e-15)
		})
		t.Run("float32", func(t *testing.T) {
			checkContributions(t, randomTaps[float32](rng, testSpecs, batch), batch, rng, 1e-6)
		})
	}
}

func checkContributions[T num.Float](t *testing.T, taps []Tap[T], batch int, rng *rand.Rand, untouchedTol float64) {
	w := newWorkspace(t, taps, batch)
	c := 0.05 + rng.Float64()
	perLayer := make([]float64, len(taps))
	for l := range perLayer {
		perLayer[l] = 0.01 + rng.Float64()
	}
	g := make([]float64, w.NumParams())
	got := make([]float64, w.NumParams())
	for i := range batch {
		if err := w.PerExample(i, g); err != nil {
			t.Fatal(err)
		}
		clear(got)
		if _, err := w.ClippedSum(oneRow(batch, i), Flat{C: c}, got); err != nil {
			t.Fatal(err)
		}
		n := norm(got)
		if n > c*(1+1e-6) {
			t.Fatalf("example %d: clipped norm %v > C = %v", i, n, c)
		}
		if norm(g) < c {
			assertClose(t, "untouched contribution", got, g, untouchedTol)
			if untouchedTol < 1e-10 {
				for j := range g {
					if got[j] != g[j] {
						t.Fatalf("example %d below C changed at %d: %v != %v", i, j, got[j], g[j])
					}
				}
			}
		}
		clear(got)
		rule := PerLayer{C: perLayer}
		if _, err := w.ClippedSum(oneRow(batch, i), rule, got); err != nil {
			t.Fatal(err)
		}
		for l := range taps {
			part := got[w.offsets[l] : w.offsets[l]+taps[l].NumParams()]
			if n := norm(part); n > perLayer[l]*(1+1e-6) {
				t.Fatalf("example %d layer %d: clipped norm %v > C_l = %v", i, l, n, perLayer[l])
			}
		}
		if n := norm(got); n > rule.Bound()*(1+1e-6) {
			t.Fatalf("example %d: per-layer clipped norm %v > sqrt(ΣC_l²) = %v", i, n, rule.Bound())
		}
	}
}

// TestPaddingRowsContributeExactlyZero fills the padding rows with NaN and huge values and
// checks that the result is bit-for-bit that of a batch holding only the real rows.
func TestPaddingRowsContributeExactlyZero(t *testing.T) {
	const batch = 6
	mask := []bool{true, false, true, false, false, true}
	for _, fill := range []float64{math.NaN(), 1e30, 0} {
		rng := rand.New(rand.NewPCG(7, 8))
		taps := randomTaps[float64](rng, testSpecs, batch)
		var real []int
		for i, m := range mask {
			if m {
				real = append(real, i)
			}
		}
		compact := make([]Tap[float64], len(taps))
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
		padded := newWorkspace(t, taps, batch)
		small := newWorkspace(t, compact, len(real))
		for _, rule := range []Rule{Flat{C: 0.3}, PerLayerEqual(0.3, len(taps))} {
			got := make([]float64, padded.NumParams())
			want := make([]float64, padded.NumParams())
			st, err := padded.ClippedSum(mask, rule, got)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range mask {
				if !m && st.Norms[i] != 0 {
					t.Errorf("padding row %d has norm %v, want 0", i, st.Norms[i])
				}
			}
			if _, err := small.ClippedSum(nil, rule, want); err != nil {
				t.Fatal(err)
			}
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("fill %v, rule %T: entry %d = %v with padding, %v without", fill, rule, j, got[j], want[j])
				}
			}
			clear(got)
			clear(want)
			if err := padded.Sum(mask, got); err != nil {
				t.Fatal(err)
			}
			if err := small.Sum(nil, want); err != nil {
				t.Fatal(err)
			}
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("fill %v: Sum entry %d = %v with padding, %v without", fill, j, got[j], want[j])
				}
			}
		}
	}
}

func TestClippedSumAccumulates(t *testing.T) {
	const batch = 4
	rng := rand.New(rand.NewPCG(9, 10))
	taps := randomTaps[float64](rng, testSpecs, batch)
	w := newWorkspace(t, taps, batch)
	once := make([]float64, w.NumParams())
	twice := make([]float64, w.NumParams())
	if _, err := w.ClippedSum(nil, Flat{C: 0.5}, once); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := w.ClippedSum(nil, Flat{C: 0.5}, twice); err != nil {
			t.Fatal(err)
		}
	}
	for j := range once {
		once[j] *= 2
	}
	// Summation order differs (the second call adds onto the first), so not bit-for-bit.
	assertClose(t, "two accumulated calls", twice, once, 1e-15)
}

func TestFloat32AgreesWithFloat64(t *testing.T) {
	const batch = 5
	t64 := randomTaps[float64](rand.New(rand.NewPCG(11, 12)), testSpecs, batch)
	t32 := randomTaps[float32](rand.New(rand.NewPCG(11, 12)), testSpecs, batch)
	// Round the float64 taps to float32 so both see the same inputs.
	for l := range t64 {
		for j := range t64[l].In {
			t64[l].In[j] = float64(t32[l].In[j])
		}
		for j := range t64[l].GradZ {
			t64[l].GradZ[j] = float64(t32[l].GradZ[j])
		}
	}
	w64 := newWorkspace(t, t64, batch)
	w32 := newWorkspace(t, t32, batch)
	g64 := make([]float64, w64.NumParams())
	g32 := make([]float64, w32.NumParams())
	s64, err := w64.ClippedSum(nil, Flat{C: 0.2}, g64)
	if err != nil {
		t.Fatal(err)
	}
	s32, err := w32.ClippedSum(nil, Flat{C: 0.2}, g32)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "float32 clipped sum", g32, g64, 1e-5)
	assertClose(t, "float32 norms", s32.Norms, s64.Norms, 1e-5)
}

func TestWorkspaceErrors(t *testing.T) {
	const batch = 3
	rng := rand.New(rand.NewPCG(13, 14))
	taps := randomTaps[float64](rng, testSpecs, batch)
	w := newWorkspace(t, taps, batch)
	d := w.NumParams()
	for _, tc := range []struct {
		name string
		call func(dst []float64) error
		want error
	}{
		{"short dst", func([]float64) error { _, err := w.ClippedSum(nil, Flat{C: 1}, make([]float64, d-1)); return err }, ErrShape},
		{"mask length", func(dst []float64) error { _, err := w.ClippedSum([]bool{true}, Flat{C: 1}, dst); return err }, ErrShape},
		{"zero C", func(dst []float64) error { _, err := w.ClippedSum(nil, Flat{C: 0}, dst); return err }, ErrRule},
		{"NaN C", func(dst []float64) error { _, err := w.ClippedSum(nil, Flat{C: math.NaN()}, dst); return err }, ErrRule},
		{"infinite C", func(dst []float64) error { _, err := w.ClippedSum(nil, Flat{C: math.Inf(1)}, dst); return err }, ErrRule},
		{"nil rule", func(dst []float64) error { _, err := w.ClippedSum(nil, nil, dst); return err }, ErrRule},
		{"per-layer count", func(dst []float64) error {
			_, err := w.ClippedSum(nil, PerLayer{C: []float64{1, 1}}, dst)
			return err
		}, ErrRule},
		{"per-layer negative", func(dst []float64) error {
			_, err := w.ClippedSum(nil, PerLayer{C: []float64{1, 1, -1, 1}}, dst)
			return err
		}, ErrRule},
		{"sum short dst", func([]float64) error { return w.Sum(nil, make([]float64, d+1)) }, ErrShape},
		{"per-example index", func(dst []float64) error { return w.PerExample(batch, dst) }, ErrShape},
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
	if _, err := w.ClippedSum(nil, Flat{C: 1}, dst); !errors.Is(err, ErrNonFinite) {
		t.Fatalf("NaN gradient: error %v, want ErrNonFinite", err)
	}
	for _, v := range dst {
		if v != 0 {
			t.Fatal("NaN gradient: dst written")
		}
	}
	// ... but not in a padding row.
	if _, err := w.ClippedSum([]bool{false, true, true}, Flat{C: 1}, dst); err != nil {
		t.Fatalf("NaN in padding row: %v", err)
	}

	bad := []struct {
		name  string
		taps  []Tap[float64]
		batch int
	}{
		{"no taps", nil, 3},
		{"zero batch", taps, 0},
		{"short input", []Tap[float64]{{Kind: denseKind, InDim: 2, OutDim: 2, In: make([]float64, 3), GradZ: make([]float64, 4)}}, 2},
		{"short grad", []Tap[float64]{{Kind: convKind, InDim: 2, OutDim: 2, Positions: 3, In: make([]float64, 12), GradZ: make([]float64, 11)}}, 2},
		{"bad kind", []Tap[float64]{{Kind: testKind(7), InDim: 1, OutDim: 1, In: make([]float64, 1), GradZ: make([]float64, 1)}}, 1},
		{"zero positions", []Tap[float64]{{Kind: convKind, InDim: 1, OutDim: 1, In: nil, GradZ: nil}}, 1},
	}
	for _, tc := range bad {
		if _, err := NewWorkspace(gradients(tc.taps), tc.batch); !errors.Is(err, ErrShape) {
			t.Errorf("NewWorkspace %s: error %v, want ErrShape", tc.name, err)
		}
	}
}

func TestRuleBounds(t *testing.T) {
	if b := (Flat{C: 1.5}).Bound(); b != 1.5 {
		t.Errorf("Flat{1.5}.Bound() = %v", b)
	}
	if b := (PerLayer{C: []float64{3, 4}}).Bound(); b != 5 {
		t.Errorf("PerLayer{3, 4}.Bound() = %v, want 5", b)
	}
	r := PerLayerEqual(2, 4)
	for _, c := range r.C {
		if c != 1 {
			t.Errorf("PerLayerEqual(2, 4) threshold %v, want 2/sqrt(4) = 1", c)
		}
	}
	if b := PerLayerEqual(1, 3).Bound(); math.Abs(b-1) > 1e-15 {
		t.Errorf("PerLayerEqual(1, 3).Bound() = %v, want 1", b)
	}
}

// TestEvenGroups: the partial-sum count is even (2 cores take equal shares), at most 16,
// at least 2, and never more than fit in the memory bound — worked by hand for wrn-16-4's
// 2,751,146 float32 parameters: 32 MiB holds ⌊33,554,432 / 11,004,584⌋ = 3 of them, so 2.
func TestEvenGroups(t *testing.T) {
	for _, tc := range []struct{ fit, want int }{
		{0, 2}, {1, 2}, {2, 2}, {3, 2}, {4, 4}, {7, 6}, {15, 14}, {16, 16}, {17, 16}, {1000, 16},
		{(32 << 20) / (2751146 * 4), 2},
	} {
		if got := evenGroups(tc.fit); got != tc.want {
			t.Errorf("evenGroups(%d) = %d, want %d", tc.fit, got, tc.want)
		}
	}
}
