package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/prior"
)

// PreparePriors computes or loads, before the model is built, the map of a leading
// layers.Whitened (-model scatter-prior-linear), saying on w where it comes from and, when
// it has to be computed (minutes, once per machine), how far that has come.
func PreparePriors(spec nn.Spec, w io.Writer) error {
	return PreparePriorsContext(context.Background(), spec, w)
}

// PreparePriorsContext is PreparePriors that stops, with ctx's error, once ctx is done
// (train's SIGTERM). A computation says how many images it renders before the first, and
// then how far it came at every tenth and at least every 10 s.
func PreparePriorsContext(ctx context.Context, spec nn.Spec, w io.Writer) error {
	if len(spec.Layers) == 0 {
		return nil
	}
	l, ok := spec.Layers[0].(layers.Whitened)
	if !ok {
		return nil
	}
	dir, err := prior.CacheDir()
	if err != nil {
		dir = "(none: " + err.Error() + ")"
	}
	start := time.Now()
	announced, lastStage, lastTenth, lastSaid := false, "", -1, start
	progress := func(stage string, done, total int) {
		if !announced {
			fmt.Fprintf(w, "computing the whitening map of the dead-leaves prior (%d images, no data; once per machine, cached in %s):\n", l.Prior.Len(), dir)
			announced = true
		}
		tenth := 0
		if total > 0 {
			tenth = 10 * done / total
		}
		if stage == lastStage && tenth == lastTenth && time.Since(lastSaid) < 10*time.Second {
			return
		}
		lastStage, lastTenth, lastSaid = stage, tenth, time.Now()
		if total > 0 {
			fmt.Fprintf(w, "  %s: %d of %d images (%.0f s)\n", stage, done, total, time.Since(start).Seconds())
		} else {
			fmt.Fprintf(w, "  %s… (%.0f s)\n", stage, time.Since(start).Seconds())
		}
	}
	use, err := l.PrepareContext(ctx, spec.InputShape, progress)
	if err != nil {
		return err
	}
	switch {
	case use.Loaded:
		fmt.Fprintf(w, "whitening map of the dead-leaves prior loaded from %s\n", use.File)
	default:
		fmt.Fprintf(w, "whitening map computed in %.0f s", time.Since(start).Seconds())
		if use.File != "" && use.Problem == "" {
			fmt.Fprintf(w, ", cached in %s", use.File)
		}
		fmt.Fprintln(w)
	}
	if use.Problem != "" {
		fmt.Fprintf(w, "warning: prior cache: %s\n", use.Problem)
	}
	return nil
}

// PrepareCheckpointPriors is PreparePriors for the model of checkpoint c, so that
// evaluate, predict and export say so when they have to compute a prior's map (a
// checkpoint holds its settings, not the map). A checkpoint without an architecture, or
// one whose architecture does not decode (ModelFromCheckpoint then says why), has none.
func PrepareCheckpointPriors(c *checkpoint.Training, w io.Writer) error {
	if c == nil || c.Architecture == nil {
		return nil
	}
	spec, err := nn.SpecOf(c.Architecture, c.Model)
	if err != nil {
		return nil
	}
	return PreparePriors(spec, w)
}
