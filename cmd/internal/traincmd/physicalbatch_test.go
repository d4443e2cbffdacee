package traincmd

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/privrand"
)

// TestPhysicalBatchClamped (issue 23 item 4): -physical-batch 100000 on the 8,000-example
// sample took 647 MB (2M asked for one 6.27 GB allocation). It is lowered, with a note, to
// the rows a step can fill (n and q's batch bound), and the run allocates far less.
func TestPhysicalBatchClamped(t *testing.T) {
	p, err := privrand.NewPoisson(8000, 256.0/8000)
	if err != nil {
		t.Fatal(err)
	}
	want := p.BatchBound(stepRowsTail)
	if want < 256 || want > 256+6*16 { // mean 256, standard deviation √(256·(1−q)) ≈ 15.7
		t.Fatalf("bound %d: want about 256 + 5 standard deviations", want)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code, stdout, stderr := runCmd(t, context.Background(), "-model", "logreg", "-epochs", "1", "-batch", "256",
		"-physical-batch", "100000", "-seed", "1", "-json")
	runtime.ReadMemStats(&after)
	if code != exit.OK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s := decodeSummary(t, stdout)
	if got := s["physical_batch"]; got != float64(want) {
		t.Errorf("physical_batch %v, want %d", got, want)
	}
	if !strings.Contains(stderr, "-physical-batch 100000 lowered to") {
		t.Errorf("no note on stderr:\n%s", stderr)
	}
	const limit = 256 << 20
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit {
		t.Errorf("the run allocated %d MB, want < %d MB", alloc>>20, limit>>20)
	} else {
		t.Logf("allocated %d MB", alloc>>20)
	}

	// Shuffled batches hold at most -batch examples; with -augmult K, K rows each.
	code, stdout, stderr = runCmd(t, context.Background(), "-model", "logreg", "-epochs", "1", "-batch", "200",
		"-sampling", "shuffle", "-augmult", "2", "-physical-batch", "100000", "-seed", "1", "-json")
	if code != exit.OK {
		t.Fatalf("shuffle: exit %d: %s", code, stderr)
	}
	if got := decodeSummary(t, stdout)["physical_batch"]; got != float64(400) {
		t.Errorf("shuffle, K = 2: physical_batch %v, want 400", got)
	}
	// A value the step can fill is kept as given.
	code, stdout, stderr = runCmd(t, context.Background(), "-model", "logreg", "-epochs", "1", "-batch", "256",
		"-physical-batch", "64", "-seed", "1", "-json")
	if code != exit.OK || decodeSummary(t, stdout)["physical_batch"] != float64(64) || strings.Contains(stderr, "lowered") {
		t.Errorf("-physical-batch 64: exit %d, %s", code, stderr)
	}
}
