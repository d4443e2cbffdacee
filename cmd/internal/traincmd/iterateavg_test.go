package traincmd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// -average-iterates releases the average of the iterates: the summary says so, the
// checkpoint holds the average (not the last iterate, which a run without the flag and
// the same seed ends at) and names it; -resume of it is refused, and so are the flag
// with -ema, with -resume and unknown kinds. -ema and a plain checkpoint/resume keep
// working beside it (TestResume and the EMA tests cover them).
func TestAverageIterates(t *testing.T) {
	dir := t.TempDir()
	avg, raw := filepath.Join(dir, "avg.ckpt"), filepath.Join(dir, "raw.ckpt")
	common := []string{"-model", "logreg", "-optimizer", "dp-lssgd", "-seed", "7", "-noise", "1.1", "-batch", "500", "-epochs", "2", "-lr", "0.5", "-json"}
	s := decodeSummary(t, mustRun(t, append(common, "-average-iterates", "step", "-checkpoint", avg)...))
	if s["average_iterates"] != "step" {
		t.Errorf("summary average_iterates = %v, want step", s["average_iterates"])
	}
	r := decodeSummary(t, mustRun(t, append(common, "-checkpoint", raw)...))
	if _, ok := r["average_iterates"]; ok {
		t.Errorf("a run without the flag reports average_iterates %v", r["average_iterates"])
	}
	if s["epsilon"] != r["epsilon"] {
		t.Errorf("ε %v with the average, %v without: averaging must cost nothing", s["epsilon"], r["epsilon"])
	}
	ca, err := checkpoint.Load(avg)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := checkpoint.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Settings[training.IterateAverageSetting] != "iterate average (step-weighted)" {
		t.Errorf("checkpoint settings %v", ca.Settings)
	}
	same := true
	for i := range ca.Params {
		if ca.Params[i] != cr.Params[i] {
			same = false
			break
		}
	}
	if same {
		t.Error("the averaged run's checkpoint holds the last iterate")
	}
	code, _, stderr := runCmd(t, context.Background(), "-resume", avg, "-epochs", "3")
	if code != exit.Usage || !strings.Contains(stderr, "cannot be resumed") {
		t.Errorf("-resume of an averaged run: exit %d, %s", code, stderr)
	}
	for _, bad := range [][]string{
		{"-average-iterates", "mean"},
		{"-average-iterates", "uniform", "-ema", "0.9"},
		{"-average-iterates", "uniform", "-resume", raw},
	} {
		code, _, stderr := runCmd(t, context.Background(), append([]string{"-model", "logreg", "-epochs", "1"}, bad...)...)
		if code != exit.Usage || !strings.Contains(stderr, "-average-iterates") {
			t.Errorf("%v: exit %d, %s", bad, code, stderr)
		}
	}
}
