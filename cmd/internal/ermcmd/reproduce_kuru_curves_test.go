package ermcmd

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/erm"
	"github.com/privtrain/privtrain/erm/data"
)

// logisticValue is F(x) = (1/n) Σ log(1 + exp(−y_i u_iᵀx)) + (Λ/2)‖x‖²
// written out, without erm's Problem.Value.
func logisticValue(ds *data.Dataset, lambda float64, x []float64) float64 {
	var s float64
	for i := range ds.Len() {
		s += math.Log1p(math.Exp(-ds.Y[i] * floats.Dot(ds.X.RawRowView(i), x)))
	}
	return s/float64(ds.Len()) + 0.5*lambda*floats.Dot(x, x)
}

// newtonOptimum minimises logisticValue by Newton's method with the
// Hessian (1/n) Σ σ(1−σ) u uᵀ + ΛI, independently of erm.FindOptimum.
func newtonOptimum(t *testing.T, ds *data.Dataset, lambda float64) float64 {
	n, d := ds.Len(), ds.Dim()
	x := make([]float64, d)
	for range 50 {
		g := mat.NewVecDense(d, nil)
		h := mat.NewSymDense(d, nil)
		for i := range n {
			u := mat.NewVecDense(d, ds.X.RawRowView(i))
			s := 1 / (1 + math.Exp(ds.Y[i]*mat.Dot(u, mat.NewVecDense(d, x)))) // σ(−y uᵀx)
			g.AddScaledVec(g, -ds.Y[i]*s/float64(n), u)
			h.SymRankOne(h, s*(1-s)/float64(n), u)
		}
		for j := range d {
			g.SetVec(j, g.AtVec(j)+lambda*x[j])
			h.SetSym(j, j, h.At(j, j)+lambda)
		}
		var step mat.VecDense
		if err := step.SolveVec(h, g); err != nil {
			t.Fatal(err)
		}
		floats.Sub(x, step.RawVector().Data)
		if mat.Norm(g, 2) < 1e-13 {
			break
		}
	}
	return logisticValue(ds, lambda, x)
}

// TestKuruCurves records F(x_t) − F* with kuruRun and checks every run's
// curve against quantities computed here: its first point is
// F(x_0) − F* and its last is the excess risk of the run's output (the
// final error the runner reports, and F(x_T) − F* recomputed from an
// untraced rerun), with F and F* from logisticValue and Newton's method;
// points sit at every stride-th iteration and at the last one (T' for the
// -opt variants).
func TestKuruCurves(t *testing.T) {
	const n, d, lambda, stride = 2000, 5, 0.02, 7
	ds, err := data.Synthetic(n, d, 4)
	if err != nil {
		t.Fatal(err)
	}
	p := &erm.Problem{Data: ds, Loss: erm.Logistic{}, Lambda: lambda}
	opt, err := erm.FindOptimum(p)
	if err != nil {
		t.Fatal(err)
	}
	fStar := newtonOptimum(t, ds, lambda)
	if math.Abs(fStar-opt.Value) > 1e-9 {
		t.Fatalf("Newton F* = %v, erm.FindOptimum %v", fStar, opt.Value)
	}
	x0 := []float64{3, 3, 3, 3, 3}
	for _, m := range []int{0, 200} {
		ls := erm.LaplaceSettings{Epsilon: 1, Iterations: 40, BatchSize: m, Smoothness: kuruL(p), Start: x0}
		for k, sv := range kuruSolvers {
			var tsv bytes.Buffer
			const runs = 3
			cell, err := kuruRun(p, opt, sv.build, ls, k, runs, stride, sv.name, &tsv)
			if err != nil {
				t.Fatal(err)
			}
			pts := make([][][2]float64, runs) // [run] → (t, value)
			for _, line := range strings.Split(strings.TrimSpace(tsv.String()), "\n") {
				f := strings.Split(line, "\t")
				if len(f) != 4 || f[0] != sv.name {
					t.Fatalf("%s: line %q", sv.name, line)
				}
				it, _ := strconv.Atoi(f[1])
				s, _ := strconv.Atoi(f[2])
				v, err := strconv.ParseFloat(f[3], 64)
				if err != nil || s < 0 || s >= runs {
					t.Fatalf("%s: line %q", sv.name, line)
				}
				pts[s] = append(pts[s], [2]float64{float64(it), v})
			}
			want0 := logisticValue(ds, lambda, x0) - fStar
			for s, c := range pts {
				for i, pt := range c {
					if i < len(c)-1 && pt[0] != float64(i*stride) {
						t.Fatalf("%s m=%d run %d: point %d at t = %v, want %d", sv.name, m, s, i, pt[0], i*stride)
					}
				}
				last := c[len(c)-1]
				if int(last[0]) != cell.ranT || len(c) != (cell.ranT+stride-1)/stride+1 {
					t.Errorf("%s m=%d run %d: %d points ending at t = %v, want every %d-th to T = %d and T", sv.name, m, s, len(c), last[0], stride, cell.ranT)
				}
				if math.Abs(c[0][1]-want0) > 1e-5*want0 {
					t.Errorf("%s m=%d run %d: F(x_0) − F* = %v, want %v", sv.name, m, s, c[0][1], want0)
				}
				if math.Abs(last[1]-cell.risks[s]) > 1e-5*cell.risks[s] {
					t.Errorf("%s m=%d run %d: curve ends at %v, the runner's final error is %v", sv.name, m, s, last[1], cell.risks[s])
				}
				res, err := sv.build(ls).Solve(p, erm.NewNoise(uint64(1000*k+s)))
				if err != nil {
					t.Fatal(err)
				}
				if want := logisticValue(ds, lambda, res.X) - fStar; math.Abs(last[1]-want) > 1e-5*want+1e-12 {
					t.Errorf("%s m=%d run %d: curve ends at %v, F(x_T) − F* of an untraced rerun is %v", sv.name, m, s, last[1], want)
				}
			}
		}
	}
}

// TestReproduceKuruCurvesFiles checks -kuru-curves' files (named per panel
// and T, a header, every iterate at the default stride for T = 20) and the
// refusals of -kuru-stride and -kuru-curves.
func TestReproduceKuruCurvesFiles(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCapture("reproduce", "-kuru", "-quick", "-seeds", "2", "-out", filepath.Join(dir, "k.md"), "-kuru-curves", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "p1-mn-c1-T20.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nseries\titeration\trun\texcess_risk\n") {
		t.Error("no header line")
	}
	var its []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "DP-HB\t") && strings.Split(line, "\t")[2] == "1" {
			its = append(its, strings.Split(line, "\t")[1])
		}
	}
	if got := strings.Join(its, ","); got != "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20" {
		t.Errorf("DP-HB run 1 recorded at t = %s, want 0..20", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "p1-m300-c0.1-T50.tsv")); err != nil {
		t.Error(err)
	}
	for _, bad := range [][]string{
		{"reproduce", "-kuru", "-quick", "-kuru-stride", "-1"},
		{"reproduce", "-quick", "-kuru-curves", dir},
	} {
		if code, _, stderr := runCapture(bad...); code != 2 || !strings.Contains(stderr, "-kuru-") {
			t.Errorf("%v: exit %d, %q", bad, code, stderr)
		}
	}
}

// TestKuruCurveName checks the file names follow the paper's figures.
func TestKuruCurveName(t *testing.T) {
	for _, c := range []struct {
		m, n int
		c    float64
		T    int
		want string
	}{
		{0, 100000, 1, 200, "p1-fig3-c1-T200.tsv"},
		{1000, 100000, 0.1, 1000, "p1-fig4-c0.1-T1000.tsv"},
		{0, 3000, 1, 20, "p1-mn-c1-T20.tsv"},
		{300, 3000, 0.1, 50, "p1-m300-c0.1-T50.tsv"},
	} {
		if got := kuruCurveName(c.m, c.n, c.c, c.T); got != c.want {
			t.Errorf("kuruCurveName(%d, %d, %g, %d) = %s, want %s", c.m, c.n, c.c, c.T, got, c.want)
		}
	}
}
