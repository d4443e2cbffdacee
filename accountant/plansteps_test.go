package accountant

import (
	"errors"
	"math"
	"testing"
)

// TestPlanSteps checks epochs·⌈n/b⌉ against a brute-force count: an epoch is the number
// of batches of b needed to cover n examples, counted by subtraction.
func TestPlanSteps(t *testing.T) {
	cover := func(n, b int) int {
		k := 0
		for left := n; left > 0; left -= b {
			k++
		}
		return k
	}
	for _, c := range []struct{ n, b, epochs int }{
		{60000, 256, 60}, {8000, 2048, 30}, {1000, 100, 10}, {50000, 256, 60}, {7, 7, 1}, {7, 1, 3}, {10, 3, 4},
	} {
		got, err := PlanSteps(c.n, c.b, c.epochs)
		if err != nil {
			t.Fatal(err)
		}
		if want := c.epochs * cover(c.n, c.b); got != want {
			t.Errorf("PlanSteps(%d, %d, %d) = %d, want %d", c.n, c.b, c.epochs, got, want)
		}
		if spe := StepsPerEpoch(c.n, c.b); spe != cover(c.n, c.b) {
			t.Errorf("StepsPerEpoch(%d, %d) = %d, want %d", c.n, c.b, spe, cover(c.n, c.b))
		}
	}
	// The numbers: n = 60,000, b = 256, 60 epochs is 60·235 = 14,100 steps (TF
	// Privacy's ⌈60·60000/256⌉ = 14,063 is not what a trainer runs); the default cmd/train
	// run, 30 epochs of 8,000 at b = 2,048, is 30·4 = 120.
	if s, _ := PlanSteps(60000, 256, 60); s != 14100 {
		t.Errorf("60 epochs of 60000 at b = 256: %d steps, want 14100", s)
	}
	if s, _ := PlanSteps(8000, 2048, 30); s != 120 {
		t.Errorf("30 epochs of 8000 at b = 2048: %d steps, want 120", s)
	}
	for _, c := range []struct{ n, b, epochs int }{{0, 1, 1}, {10, 0, 1}, {10, 11, 1}, {10, 3, 0}, {10, 1, math.MaxInt32}} {
		if _, err := PlanSteps(c.n, c.b, c.epochs); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("PlanSteps(%d, %d, %d): error %v, want ErrInvalidParameter", c.n, c.b, c.epochs, err)
		}
	}
	if StepsPerEpoch(10, 11) != 0 || StepsPerEpoch(0, 1) != 0 {
		t.Error("StepsPerEpoch of an impossible plan is not 0")
	}
}
