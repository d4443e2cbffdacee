package privacycmd

import "testing"

// Issue 23 item 6: this plan made the PLD accountant pick an FFT size gonum
// cannot plan; the process panicked and exited 2, the usage status. It now
// answers (exit 0, PLD's ε below RDP's).
func TestLongPlanPLD(t *testing.T) {
	if testing.Short() {
		t.Skip("composes a 10,000-step plan")
	}
	r := runJSON(t, "epsilon", "-q", "0.1", "-steps", "10000", "-noise", "0.8")
	if r.PLD == nil || !(r.PLD.Epsilon > 0 && r.PLD.Epsilon <= r.Epsilon) {
		t.Errorf("RDP ε = %v, PLD %+v: want 0 < PLD ε ≤ RDP ε", r.Epsilon, r.PLD)
	}
}
