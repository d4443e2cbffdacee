package dpoptim

import (
	"math"
	"testing"

	"github.com/privtrain/privtrain/accountant"
)

// CalibrateSchedule with the PLD accountant: less noise than RDP for the same target,
// and the PLD ε of the schedule at the returned z meets it.
func TestCalibrateSchedulePLD(t *testing.T) {
	rule := &ADPPolynomial{Eta: 1, A: 19, C: 1}
	const q, steps, eps, delta = 0.05, 40, 0.5, 1e-5
	zp, ep, err := CalibrateSchedule(rule, q, steps, eps, delta, accountant.WithAccountant(accountant.PLD{}))
	if err != nil {
		t.Fatal(err)
	}
	zr, _, err := CalibrateSchedule(rule, q, steps, eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	var h []accountant.Segment
	for i := range steps {
		h = append(h, accountant.Segment{Q: q, Z: zp * rule.NoiseScale(i), Steps: 1})
	}
	got, err := accountant.PLD{}.Epsilon(h, delta)
	if err != nil {
		t.Fatal(err)
	}
	if got.Epsilon != ep || ep > eps || zp >= zr || math.IsNaN(zp) {
		t.Errorf("PLD: z = %v, ε = %v (recomputed %v); RDP z = %v; target %v", zp, ep, got.Epsilon, zr, eps)
	}
}
