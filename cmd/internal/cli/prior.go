package cli

import (
	"context"
	"fmt"
	"io"
	"sync"
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

// Prior is the leading layers.Whitened of spec, whose map PreparePriors prepares, if it
// has one.
func Prior(spec nn.Spec) (layers.Whitened, bool) {
	if len(spec.Layers) == 0 {
		return layers.Whitened{}, false
	}
	l, ok := spec.Layers[0].(layers.Whitened)
	return l, ok
}

// PreparePriorsContext is PreparePriors that stops, with an error wrapping ctx's, once
// ctx is done (train's Ctrl-C or SIGTERM): within seconds in every phase. A computation
// says how many images it renders before the first, then each phase (the covariance of
// the images' features, the inverse square root) with how far it came, its percentage
// and an estimate of the time left, at every tenth and at least every priorEvery, and a
// line at least every priorHeartbeat while a phase reports nothing (an
// eigen-decomposition): a log file sees the computation move, not only a terminal. A
// second process that needs the same map says whom it waits for, then loads it.
func PreparePriorsContext(ctx context.Context, spec nn.Spec, w io.Writer) error {
	l, ok := Prior(spec)
	if !ok {
		return nil
	}
	dir, err := prior.CacheDir()
	if err != nil {
		dir = "(none: " + err.Error() + ")"
	}
	start := time.Now()
	var mu sync.Mutex
	announced, lastStage, lastTenth, lastSaid := false, "", -1, start
	var stageStart time.Time
	var stageDone, stageTotal int
	say := func(now time.Time) {
		lastSaid = now
		el := now.Sub(start).Seconds()
		if stageTotal <= 0 {
			fmt.Fprintf(w, "  %s… (%.0f s, %.0f s in this phase)\n", lastStage, el, now.Sub(stageStart).Seconds())
			return
		}
		eta := "ETA unknown"
		if in := now.Sub(stageStart).Seconds(); stageDone > 0 && stageDone < stageTotal {
			eta = fmt.Sprintf("about %.0f s left", in*float64(stageTotal-stageDone)/float64(stageDone))
		} else if stageDone >= stageTotal {
			eta = "done"
		}
		fmt.Fprintf(w, "  %s: %d of %d %s, %.0f%% (%.0f s; %s)\n", lastStage, stageDone, stageTotal, priorUnit(lastStage), 100*float64(stageDone)/float64(stageTotal), el, eta)
	}
	progress := func(stage string, done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if stage == prior.StageWaiting {
			who := "another process"
			if done > 0 {
				who = fmt.Sprintf("process %d", done)
			}
			fmt.Fprintf(w, "waiting for %s computing the whitening map of the dead-leaves prior (the same map; it is loaded once written)…\n", who)
			return
		}
		now := time.Now()
		if !announced {
			fmt.Fprintf(w, "computing the whitening map of the dead-leaves prior (%d images, no data; once per machine, cached in %s):\n", l.Prior.Len(), dir)
			announced = true
		}
		if stage != lastStage {
			stageStart = now
		}
		tenth := 0
		if total > 0 {
			tenth = 10 * done / total
		}
		stageDone, stageTotal = done, total
		if stage == lastStage && tenth == lastTenth && now.Sub(lastSaid) < priorEvery {
			return
		}
		lastStage, lastTenth = stage, tenth
		say(now)
	}
	stopBeat := make(chan struct{})
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		t := time.NewTicker(priorHeartbeat / 3)
		defer t.Stop()
		for {
			select {
			case <-stopBeat:
				return
			case now := <-t.C:
				mu.Lock()
				if announced && now.Sub(lastSaid) >= priorHeartbeat*2/3 {
					say(now)
				}
				mu.Unlock()
			}
		}
	}()
	use, err := l.PrepareContext(ctx, spec.InputShape, progress)
	close(stopBeat)
	<-beatDone
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while preparing the whitening map of the dead-leaves prior after %.0f s (nothing cached; the next run starts it again): %w", time.Since(start).Seconds(), err)
		}
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

// priorEvery and priorHeartbeat are the longest gaps between PreparePriorsContext's lines
// while a phase reports progress, and while it does not (variables for tests).
var (
	priorEvery     = 10 * time.Second
	priorHeartbeat = 30 * time.Second
)

// priorUnit is what a phase of the map's computation counts.
func priorUnit(stage string) string {
	if stage == "covariance" {
		return "images"
	}
	return "products"
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
