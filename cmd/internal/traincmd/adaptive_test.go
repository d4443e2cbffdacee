package traincmd

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// Bad adaptive clipping command lines exit with status 2 and one line naming the problem.
func TestAdaptiveBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-clipping", "adaptive", "-clip-quantile", "0"}, "-clip-quantile"},
		{[]string{"-clipping", "adaptive", "-clip-quantile", "1"}, "-clip-quantile"},
		{[]string{"-clipping", "adaptive", "-clip-quantile", "1.5"}, "-clip-quantile"},
		{[]string{"-clipping", "adaptive", "-clip-quantile", "NaN"}, "-clip-quantile"},
		{[]string{"-clip-quantile", "0.3"}, "-clipping adaptive"},
		{[]string{"-clipping", "per-layer", "-clip-lr", "0.3"}, "-clipping adaptive"},
		{[]string{"-clipping", "adaptive", "-clip-lr", "0"}, "-clip-lr"},
		{[]string{"-clipping", "adaptive", "-clip-lr", "-1"}, "-clip-lr"},
		{[]string{"-clipping", "adaptive", "-clip-count-noise", "-1"}, "-clip-count-noise"},
		{[]string{"-optimizer", "sgd", "-clipping", "adaptive"}, "not private"},
		{[]string{"-optimizer", "adam", "-clip-quantile", "0.5"}, "not private"},
		{[]string{"-optimizer", "adp-sgd", "-clipping", "adaptive"}, "adaptive"},
		// z ≈ 1 at ε = 3 and σ_b = 0.1 < z/2: the count would spend the whole budget.
		{[]string{"-model", "logreg", "-clipping", "adaptive", "-clip-count-noise", "0.1"}, "σ_b = 0.1"},
	} {
		code, stdout, stderr := runCmd(t, context.Background(), tc.args...)
		if code != exit.Usage {
			t.Errorf("train %s: exit %d, want 2 (stderr %q)", strings.Join(tc.args, " "), code, stderr)
			continue
		}
		if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("train %s: stderr %q, want one line mentioning %q", strings.Join(tc.args, " "), stderr, tc.want)
		}
	}
}

// A run with -clipping adaptive spends the ε of the same run with flat clipping (the same
// z), reports z_Δ = (z⁻² − (2σ_b)⁻²)^(−½) with σ_b = batch/20, writes C per epoch into the
// metrics, and resumes from a checkpoint with its clipping settings.
func TestAdaptiveRun(t *testing.T) {
	dir := t.TempDir()
	metrics, ck := filepath.Join(dir, "m.jsonl"), filepath.Join(dir, "r.ckpt")
	common := []string{"-model", "logreg", "-seed", "5", "-batch", "400", "-lr", "2", "-noise", "1.2", "-json"}
	flat := decodeSummary(t, mustRun(t, append(common, "-epochs", "2")...))
	ada := decodeSummary(t, mustRun(t, append(common, "-epochs", "2", "-clipping", "adaptive", "-clip", "0.05", "-clip-quantile", "0.7", "-metrics", metrics)...))
	z := ada["noise_multiplier"].(float64)
	if z != flat["noise_multiplier"].(float64) || ada["epsilon"].(float64) != flat["epsilon"].(float64) {
		t.Errorf("adaptive z = %v, ε = %v; flat z = %v, ε = %v", z, ada["epsilon"], flat["noise_multiplier"], flat["epsilon"])
	}
	if want := math.Pow(math.Pow(z, -2)-math.Pow(2*20.0, -2), -0.5); math.Abs(ada["gradient_noise_multiplier"].(float64)-want) > 1e-12 {
		t.Errorf("gradient_noise_multiplier %v, want %v", ada["gradient_noise_multiplier"], want)
	}
	if ada["clipping"] != "adaptive C0=0.05 quantile=0.7 lr=0.2 count-noise=20" {
		t.Errorf("clipping %q", ada["clipping"])
	}
	if _, ok := flat["final_clip"]; ok {
		t.Errorf("flat run reports final_clip %v", flat["final_clip"])
	}
	clips := metricClips(t, metrics)
	final := ada["final_clip"].(float64)
	if len(clips) != 2 || clips[1] != final || clips[0] == 0.05 {
		t.Errorf("metrics clip_norm %v, final_clip %v", clips, final)
	}
	// From C_0 = 0.05 the clip grows: logistic-regression gradients are larger.
	if final <= 0.05 {
		t.Errorf("final C = %v, want it above C_0 = 0.05", final)
	}

	// Calibrated for the default ε = 3: the same z with either clipping.
	cal := []string{"-model", "logreg", "-batch", "400", "-epochs", "1", "-json"}
	cf := decodeSummary(t, mustRun(t, cal...))
	ca := decodeSummary(t, mustRun(t, append(cal, "-clipping", "adaptive")...))
	if cf["noise_multiplier"] != ca["noise_multiplier"] || ca["epsilon"].(float64) > 3 {
		t.Errorf("calibrated: flat z = %v, adaptive z = %v (ε %v)", cf["noise_multiplier"], ca["noise_multiplier"], ca["epsilon"])
	}

	// One epoch, checkpoint, resume with -resume alone to two epochs: the same run.
	mustRun(t, append(common, "-epochs", "1", "-clipping", "adaptive", "-clip", "0.05", "-clip-quantile", "0.7", "-checkpoint", ck)...)
	resumed := decodeSummary(t, mustRun(t, "-resume", ck, "-epochs", "2", "-json"))
	for _, k := range []string{"final_clip", "test_accuracy", "epsilon", "clipping"} {
		if resumed[k] != ada[k] {
			t.Errorf("resumed %s = %v, uninterrupted %v", k, resumed[k], ada[k])
		}
	}
}

func metricClips(t *testing.T, path string) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var clips []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r metricRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.ClipNorm == nil {
			t.Fatalf("metrics line without clip_norm: %s", sc.Text())
		}
		clips = append(clips, *r.ClipNorm)
	}
	return clips
}

func TestAdaptiveHelp(t *testing.T) {
	_, stdout, _ := runCmd(t, context.Background(), "-help")
	for _, f := range adaptiveFlags {
		if !strings.Contains(stdout, "\n  -"+f+" ") {
			t.Errorf("-help does not list -%s", f)
		}
	}
	if !strings.Contains(stdout, "adaptive (flat, C tracks the -clip-quantile") {
		t.Errorf("-help does not describe -clipping adaptive")
	}
}
