package ermcmd

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/erm"
	"github.com/privtrain/privtrain/erm/data"
)

// TestKuruLClosedForm checks the data-independent smoothness against its
// closed form R²/4 + 2λ, R² = min(d, 20) for covariates in [0,1]^d with
// ‖u‖₁ ≤ 20, for the paper's d = 20 and a smaller d.
func TestKuruLClosedForm(t *testing.T) {
	for _, c := range []struct {
		d    int
		want float64
	}{{20, 20.0/4 + 2*0.01}, {5, 5.0/4 + 2*0.01}} {
		ds, err := data.Synthetic(50, c.d, 3)
		if err != nil {
			t.Fatal(err)
		}
		got := kuruL(&erm.Problem{Data: ds, Loss: erm.Logistic{}, Lambda: 2 * 0.01})
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("d = %d: kuruL = %v, want %v", c.d, got, c.want)
		}
	}
	// No declared bound: no data-independent L.
	ds, _ := data.Synthetic(10, 3, 1)
	ds.L2Bound = 0
	if got := kuruL(&erm.Problem{Data: ds, Loss: erm.Logistic{}, Lambda: 0.02}); got != 0 {
		t.Errorf("without a declared bound kuruL = %v, want 0", got)
	}
}

// TestKuruLBoundsHessian checks on generated data that the data-independent
// L bounds the largest Hessian eigenvalue of the objective, computed
// directly, at several points, and also the worst case
// λ_max(UᵀU/n)/4 + 2λ over all points.
func TestKuruLBoundsHessian(t *testing.T) {
	const n, d, lambda = 20000, 20, 0.02
	ds, err := data.Synthetic(n, d, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := &erm.Problem{Data: ds, Loss: erm.Logistic{}, Lambda: lambda}
	L := kuruL(p)
	ones := make([]float64, d)
	for j := range ones {
		ones[j] = 1
	}
	points := [][]float64{make([]float64, d), ones, make([]float64, d)}
	floats.Scale(0.01, points[1]) // near 0: σ' ≈ 1/4, the tightest point
	for j := range points[2] {
		points[2][j] = float64(j%3) - 1
	}
	for _, x := range points {
		h := mat.NewSymDense(d, nil)
		for i := range n {
			u := ds.X.RawRowView(i)
			s := 1 / (1 + math.Exp(-ds.Y[i]*floats.Dot(u, x)))
			h.SymRankOne(h, s*(1-s)/n, mat.NewVecDense(d, u))
		}
		for j := range d {
			h.SetSym(j, j, h.At(j, j)+lambda)
		}
		var eig mat.EigenSym
		if !eig.Factorize(h, false) {
			t.Fatal("eigendecomposition failed")
		}
		vals := eig.Values(nil)
		if top := vals[d-1]; top > L {
			t.Errorf("Hessian λ_max = %v at %v exceeds L = %v", top, x[:3], L)
		} else if top < 0.5 {
			t.Errorf("Hessian λ_max = %v: implausibly small (want about λ_max(UᵀU/n)/4 ≈ 1.27 near 0)", top)
		}
	}
	worst := (p.SpectralSmoothness()-lambda)/4 + lambda
	if worst > L {
		t.Errorf("λ_max(UᵀU/n)/4 + 2λ = %v exceeds L = %v", worst, L)
	}
}

// TestReproduceKuruQuick runs the seed-001 regime's pipeline on small data.
func TestReproduceKuruQuick(t *testing.T) {
	out := filepath.Join(t.TempDir(), "seed001.md")
	code, _, stderr := runCapture("reproduce", "-kuru", "-quick", "-seeds", "2", "-out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"R²/4 + 2λ = 5.02", "| DP-MASG-opt |", "T' = ", "Order by median"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestParsePanels checks -kuru-panels' grammar and its refusals.
func TestParsePanels(t *testing.T) {
	got, err := parsePanels("n:1:100,1000; 1000:0.1:200", 100000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].m != 0 || got[0].c != 1 || len(got[0].iters) != 2 || got[0].iters[1] != 1000 ||
		got[1].m != 1000 || got[1].c != 0.1 || got[1].iters[0] != 200 {
		t.Errorf("parsed %+v", got)
	}
	if got, _ := parsePanels("100000:1:5", 100000); got[0].m != 0 {
		t.Errorf("m = n given as a number: m = %d, want 0 (full gradients)", got[0].m)
	}
	for _, bad := range []string{"", "n:1", "x:1:5", "0:1:5", "200001:1:5", "n:0:5", "n:-1:5", "n:inf:5", "n:1:0", "n:1:a", "n:1:5,"} {
		if _, err := parsePanels(bad, 200000); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	code, _, stderr := runCapture("reproduce", "-kuru", "-quick", "-kuru-panels", "n:0:5", "-out", filepath.Join(t.TempDir(), "x.md"))
	if code != 2 || !strings.Contains(stderr, "-kuru-panels") {
		t.Errorf("bad -kuru-panels: exit %d, %q", code, stderr)
	}
}
