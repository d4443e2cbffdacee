package dpoptim

import (
	"errors"
	"math"
	"testing"
)

// CheckNoiseMultiplier is the one range check of z: a finite z ≥ 0. NewPrivate takes
// exactly those values, and AdaptiveNoiseMultiplier those but 0 (it has no z_Δ).
func TestCheckNoiseMultiplier(t *testing.T) {
	for _, c := range []struct {
		z  float64
		ok bool
	}{
		{0, true}, {math.SmallestNonzeroFloat64, true}, {0.5, true}, {1e300, true}, {math.MaxFloat64, true},
		{-math.SmallestNonzeroFloat64, false}, {-1, false}, {math.NaN(), false},
		{math.Inf(1), false}, {math.Inf(-1), false},
	} {
		err := CheckNoiseMultiplier(c.z)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrConfig)) {
			t.Errorf("CheckNoiseMultiplier(%v) = %v, want ok %v (else ErrConfig)", c.z, err, c.ok)
		}
		_, err = NewPrivate(NewSGD(Constant(0.1)), PrivateConfig{NoiseMultiplier: c.z, ClipNorm: 1,
			SampleRate: 0.1, DatasetSize: 100, Recorder: &fakeRecorder{}, Noise: NewSeededNoise(1)})
		if (err == nil) != c.ok {
			t.Errorf("NewPrivate with z = %v: error %v, want ok %v", c.z, err, c.ok)
		}
		if c.z > 1e10 {
			continue // (2σ_b)² would overflow
		}
		// σ_b = 1 + |z| > z/2, so only z itself can be refused.
		sigmaB := 1 + math.Abs(c.z)
		_, err = AdaptiveNoiseMultiplier(c.z, sigmaB)
		if want := c.ok && c.z > 0; (err == nil) != want {
			t.Errorf("AdaptiveNoiseMultiplier(%v, %v): error %v, want ok %v", c.z, sigmaB, err, want)
		}
	}
}
