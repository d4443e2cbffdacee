package traincmd

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/privtrain/privtrain/training"
)

// TestHeartbeatWithoutTerminal (issue 41: wrn-16-4 silent for 7 minutes in its first
// step, mnist-scatter for 346 s of scattering, in a log file): on a fake clock, a
// reporter that is not on a terminal says what goes on — the front end's features, then
// the step running, with how far the run is and its ETA — once nothing was written for
// plainEvery, and not before; a line left open is closed first.
func TestHeartbeatWithoutTerminal(t *testing.T) {
	clock := time.Unix(1e9, 0)
	now := func() time.Time { return clock }
	var out bytes.Buffer
	hb := newHeartbeat(&out, now)
	r := &reporter{w: hb, now: now, hb: hb, lastPlain: clock}

	r.frontEnd(training.FrontEndProgress{FrontEnd: "scattering2d", Examples: 70000})
	opened := out.Len() // "computing scattering features… ", no newline yet
	clock = clock.Add(plainEvery - time.Second)
	hb.beat()
	if out.Len() != opened {
		t.Fatalf("a beat before plainEvery wrote %q", out.String()[opened:])
	}
	clock = clock.Add(time.Second)
	hb.beat()
	want := "computing scattering features… \nstill computing scattering features of 70,000 images (30s so far)\n"
	if out.String() != want {
		t.Fatalf("after %v of silence the log says %q, want %q", plainEvery, out.String(), want)
	}
	hb.beat() // just written: quiet
	if out.String() != want {
		t.Fatalf("a second beat at once wrote %q", out.String()[len(want):])
	}
	// Half the images done after 60 s: the next beat says how far and the time left.
	r.frontEnd(training.FrontEndProgress{FrontEnd: "scattering2d", Examples: 70000, Computed: 35000})
	clock = clock.Add(plainEvery)
	hb.beat()
	if got, w := out.String()[len(want):], "still computing scattering features of 70,000 images: 35000 of 70000, 50% (1m0s so far; about 1m0s left)\n"; got != w {
		t.Fatalf("with a count the beat says %q, want %q", got, w)
	}

	r.markStart(0)
	r.step(training.StepProgress{Epoch: 1, Step: 1, StepsPerEpoch: 10, GlobalStep: 1, TotalSteps: 20, Loss: 2.3, Epsilon: math.Inf(1)})
	out.Reset()
	clock = clock.Add(4 * plainEvery)
	hb.beat()
	for _, w := range []string{"step 2/10 of epoch 1/2 running after epoch 1/2  step 1/10", "ETA ", "(2m0s so far)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("during step 2 the log says %q, without %q", out.String(), w)
		}
	}
}
