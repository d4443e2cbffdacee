package faults

import "testing"

func TestEnableIsScopedToTheTest(t *testing.T) {
	if Active(NoClip) || Active(NoNoise) {
		t.Fatal("a fault is on before any test enabled it")
	}
	t.Run("enabled", func(t *testing.T) {
		Enable(t, NoNoise)
		Enable(t, RealisedBatch)
		if !Active(NoNoise) || !Active(RealisedBatch) || Active(NoClip) {
			t.Fatalf("Active after Enable(NoNoise, RealisedBatch): %b", active.Load())
		}
		std, inv := Noise(2, 0.01, 7)
		if std != 0 || inv != 1.0/7 {
			t.Errorf("Noise(2, 0.01, 7) = %v, %v; want 0, 1/7", std, inv)
		}
		if _, inv := Noise(2, 0.01, 0); inv != 1 {
			t.Errorf("an empty batch normalises by %v, want 1", 1/inv)
		}
	})
	if active.Load() != 0 {
		t.Fatalf("faults still on after the test that enabled them: %b", active.Load())
	}
	if std, inv := Noise(2, 0.01, 7); std != 2 || inv != 0.01 {
		t.Errorf("Noise with no fault = %v, %v; want 2, 0.01", std, inv)
	}
	t.Run("div10", func(t *testing.T) {
		Enable(t, NoiseDiv10)
		if std, inv := Noise(2, 0.01, 7); std != 0.2 || inv != 0.01 {
			t.Errorf("Noise under NoiseDiv10 = %v, %v; want 0.2, 0.01", std, inv)
		}
	})
}
