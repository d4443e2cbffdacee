package checkpoint

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
)

// TestPlanString: fmt.Println(tr.Plan()) prints one readable line, here the README's
// default run written out by hand.
func TestPlanString(t *testing.T) {
	p := Plan{
		DatasetSize: 8000, BatchSize: 2048, PhysicalBatch: 128, Sampling: Poisson, SampleRate: 0.256,
		StepsPerEpoch: 4, Epochs: 30, Steps: 120, Private: true, NoiseMultiplier: 4.36372,
		Calibrated: true, Clip: 1, ClipRule: "flat C=1", Delta: 1e-5, TargetEpsilon: 3,
		Spent: accountant.Spent{Epsilon: 2.99991, Order: 7.3},
	}
	want := "poisson sampling q = 0.256 (batch 2048 of 8000, physical 128), 30 epochs × 4 steps = 120 steps; " +
		"DP: z = 4.3637 calibrated for ε = 3, clip flat C=1, δ = 1e-05, the plan spends ε = 2.9999 (RDP order 7.3)"
	if got := fmt.Sprint(p); got != want {
		t.Errorf("Plan.String() =\n%s\nwant\n%s", got, want)
	}
	p.Spent = accountant.Spent{Epsilon: 2.7535} // by the PLD accountant, which has no order
	if got, want := p.String(), "the plan spends ε = 2.7535"; !strings.HasSuffix(got, want) {
		t.Errorf("PLD Plan.String() = %s, want it to end in %q", got, want)
	}
	p.Calibrated, p.Sampling, p.Spent.Epsilon = false, Shuffle, math.Inf(1)
	want = "shuffle sampling q = 0.256 (batch 2048 of 8000, physical 128), 30 epochs × 4 steps = 120 steps; " +
		"DP: z = 4.3637 given, budget ε = 3, clip flat C=1, δ = 1e-05, the plan spends ε = ∞"
	if got := p.String(); got != want {
		t.Errorf("Plan.String() =\n%s\nwant\n%s", got, want)
	}
	p = Plan{DatasetSize: 100, BatchSize: 10, PhysicalBatch: 10, SampleRate: 0.1, StepsPerEpoch: 10, Epochs: 2, Steps: 20}
	want = "poisson sampling q = 0.1 (batch 10 of 100, physical 10), 2 epochs × 10 steps = 20 steps; not private (ε = ∞)"
	if got := p.String(); got != want {
		t.Errorf("non-private Plan.String() = %q, want %q", got, want)
	}
}
