package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The paper's Theorem 4.1 noise as cmd/train's multiplier, against an independent
// evaluation of σ² = (16G)²·B_δ·Σ_t 1/α_t²/(n²ε²), ε = 16·ε̄, in Python (docs/results/seeds.md,
// P2: the CIFAR-10 sample, n = 5,085, batch 256, 60 epochs = 1,200 steps, C_G = 2.5).
func TestPaperNoiseMatchesIndependentFormula(t *testing.T) {
	c := cell{epsBar: 0.8, clip: 2.5}
	for _, tc := range []struct {
		schedule, alg string
		want          float64
	}{
		{"poly", "dp", 32.0231},
		{"sqrt-decay", "dp", 32.0231},
		{"poly", "adp", 7.2206},
		{"sqrt-decay", "adp", 5.8503},
	} {
		z, err := paperNoise(tc.schedule, tc.alg, 1200, 5085, 256, c, 1e-5, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(z-tc.want) > 5e-4 {
			t.Errorf("%s %s: z = %.5f, want %.4f", tc.schedule, tc.alg, z, tc.want)
		}
	}
	if _, err := paperNoise("poly", "sgd", 1200, 5085, 256, c, 1e-5, 1e-5); err == nil {
		t.Error("alg sgd: no error")
	}
}

func TestEpochAccuraciesBestLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	lines := `{"epoch":1,"test_accuracy":0.25}
{"epoch":2}
{"epoch":3,"test_accuracy":0.5}
{"epoch":4,"test_accuracy":0.5}
{"epoch":5,"test_accuracy":0.375}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	accs, err := epochAccuracies(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(accs) != 4 {
		t.Fatalf("accuracies %v: want the 4 evaluated epochs", accs)
	}
	best, last, at := bestLast(accs)
	if best != 0.5 || last != 0.375 || at != 2 {
		t.Errorf("best, last, at = %g, %g, %d; want 0.5, 0.375, 2 (the first best among the evaluations)", best, last, at)
	}
	if err := os.WriteFile(path, []byte(`{"epoch":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := epochAccuracies(path); err == nil {
		t.Error("metrics without a test accuracy: no error")
	}
}

func TestCurveLinesWritesErrorPercent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.tsv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := curveLines(f, "σ 1.6, c = 0", 3, []float64{0.9, 0.955}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, _ := os.ReadFile(path)
	if want := "σ 1.6, c = 0\t1\t3\t10.00\nσ 1.6, c = 0\t2\t3\t4.50\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := curveLines(nil, "x", 1, []float64{1}); err != nil {
		t.Error(err)
	}
}

func TestFloats(t *testing.T) {
	v, err := floats("-cs", "0,1e-5,0.5")
	if err != nil || len(v) != 3 || v[1] != 1e-5 {
		t.Errorf("floats = %v, %v", v, err)
	}
	for _, bad := range []string{"", "1,,2", "-1", "NaN", "Inf", "x"} {
		if _, err := floats("-cs", bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
