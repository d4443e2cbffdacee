package scatter

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkTransform reports images per second for Fashion-MNIST's and CIFAR-10's shapes
// (J = 2, L = 8) on a batch of 256 random images, on GOMAXPROCS workers.
func BenchmarkTransform(b *testing.B) {
	for _, c := range []struct {
		name    string
		C, H, W int
	}{{"1x28x28", 1, 28, 28}, {"3x32x32", 3, 32, 32}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := New(2, 8, c.H, c.W)
			if err != nil {
				b.Fatal(err)
			}
			const batch = 256
			rng := rand.New(rand.NewPCG(1, 1))
			x := make([]float32, batch*c.C*c.H*c.W)
			for i := range x {
				x[i] = rng.Float32()
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Transform(x, c.C); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "images/s")
		})
	}
}
