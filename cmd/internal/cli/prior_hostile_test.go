package cli_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/prior"
)

// cancelOnWrite cancels a context at its first write and keeps what was written.
type cancelOnWrite struct {
	mu     sync.Mutex
	b      strings.Builder
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancel()
	return w.b.Write(p)
}

// TestPreparePriorsHostile (issue 40, item 5): a checkpoint may name the largest prior
// the bounds allow, 250,000 scenes (500,000 images) at 1×128×128, hours of work. Its
// computation says so before the first image is rendered (how many images, "0 of
// 500000"), and stops when its context is cancelled (train's SIGTERM; evaluate, predict
// and export die of SIGTERM). Before, nothing was printed until 512 images had been
// rendered and scattered, and nothing but the end of the computation stopped it: predict
// computed for more than 90 s without a word.
func TestPreparePriorsHostile(t *testing.T) {
	t.Setenv(prior.CacheEnv, t.TempDir())
	spec := nn.Spec{Name: "hostile", InputShape: []int{1, 128, 128}, NumClasses: 2, Layers: []layers.Layer{
		layers.Whitened{
			Base:  []layers.Layer{layers.Scattering2D{J: 4, L: 2}, layers.Flatten{}}, // 33·8·8 = 2,112 features
			Prior: prior.DeadLeaves{Scenes: prior.MaxScenes, Seed: 1},
			Floor: 0.01,
		},
		layers.Dense{Units: 2},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelOnWrite{cancel: cancel}
	err := cli.PreparePriorsContext(ctx, spec, w)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("PreparePriorsContext cancelled at its first words: %v, want context.Canceled", err)
	}
	for _, want := range []string{"500000 images", "0 of 500000 images"} {
		if !strings.Contains(w.b.String(), want) {
			t.Errorf("it says\n%s\nwithout %q", w.b.String(), want)
		}
	}
}
