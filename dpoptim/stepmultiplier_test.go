package dpoptim

import "testing"

// StepMultiplier against the closed form z_t = z·(A + C·(t+1))^{1/4} of ADP-SGD's
// polynomial schedule (Remark 4.1) with A = 19, C = 1, at steps where 20 + t is a fourth
// power (81, 256, 625: α = 3, 4, 5, exact in floating point), and z itself without a
// scaler or with ConstantNoise.
func TestStepMultiplierClosedForm(t *testing.T) {
	const z = 1.5
	adp := &ADPPolynomial{Eta: 1, A: 19, C: 1}
	for _, c := range []struct {
		step  int
		alpha float64
	}{{61, 3}, {236, 4}, {605, 5}} {
		if got := StepMultiplier(z, adp, c.step); got != z*c.alpha {
			t.Errorf("step %d: z_t = %v, want %v·%v", c.step, got, z, c.alpha)
		}
	}
	for _, step := range []int{0, 1, 1000} {
		if got := StepMultiplier(z, nil, step); got != z {
			t.Errorf("no scaler, step %d: z_t = %v, want %v", step, got, z)
		}
		if got := StepMultiplier(z, &ADPPolynomial{Eta: 1, A: 19, C: 1, ConstantNoise: true}, step); got != z {
			t.Errorf("ConstantNoise, step %d: z_t = %v, want %v", step, got, z)
		}
	}
}
