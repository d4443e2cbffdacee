package scatter

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user plus system CPU time, for a per-image cost that does not
// depend on how busy the other cores are.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTransform reports images per second for Fashion-MNIST's and CIFAR-10's shapes
// (J = 2, L = 8) on a batch of 256 random images, on GOMAXPROCS workers, and the CPU time
// per image (user + system, all threads).
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
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := s.Transform(x, c.C); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "images/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(batch*b.N), "cpu-ms/image")
		})
	}
}
