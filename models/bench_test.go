package models

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/nn"
)

// BenchmarkStep times one float32 training step at batch 256 — forward, the backward pass
// to every layer's pre-activation, and then either the plain summed gradient (nonprivate)
// or flat-clipped per-example gradients summed (dp). Compare the two with benchstat:
//
//	go test -run '^$' -bench Step -count 10 ./models > step.txt
//	grep nonprivate step.txt | sed 's|/nonprivate/|/|' > nonprivate.txt
//	grep /dp/ step.txt | sed 's|/dp/|/|' > dp.txt
//	go tool benchstat nonprivate.txt dp.txt
func BenchmarkStep(b *testing.B) {
	const B = 256
	for _, mode := range []string{"nonprivate", "dp"} {
		for _, tc := range []struct {
			name string
			spec nn.Spec
		}{
			{"logreg", LogisticRegression()},
			{"mnistcnn", MNISTCNN(ReLU)},
		} {
			b.Run(fmt.Sprintf("%s/%s/B=%d", mode, tc.name, B), func(b *testing.B) {
				m, err := nn.New(tc.spec, B, nn.WithSeed(1))
				if err != nil {
					b.Fatal(err)
				}
				x, labels := randomBatch(rand.New(rand.NewPCG(1, 2)), tc.spec, B)
				batch := nn.Batch{X: x, Labels: labels}
				grad := make([]float64, m.NumParams())
				rule := clipping.Flat{C: 1}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				for b.Loop() {
					if mode == "dp" {
						_, err = m.ClippedGradient(batch, rule, grad)
					} else {
						_, err = m.Gradient(batch, grad)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(B)*float64(b.N)/b.Elapsed().Seconds(), "examples/s")
				// CPU time of the whole process per step: what the step costs when the
				// machine is shared and wall time is not.
				b.ReportMetric((cpuTime()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStepRatio alternates a non-private and a private step (same model, same batch,
// order swapped every iteration) and reports the ratio of their total times. On a shared
// machine separate benchmarks drift apart; interleaving cancels most of that.
//
//	go test -run '^$' -bench StepRatio -count 10 ./models | go tool benchstat -
func BenchmarkStepRatio(b *testing.B) {
	const B = 256
	for _, tc := range []struct {
		name string
		spec nn.Spec
	}{
		{"logreg", LogisticRegression()},
		{"mnistcnn", MNISTCNN(ReLU)},
	} {
		b.Run(fmt.Sprintf("%s/B=%d", tc.name, B), func(b *testing.B) {
			m, err := nn.New(tc.spec, B, nn.WithSeed(1))
			if err != nil {
				b.Fatal(err)
			}
			x, labels := randomBatch(rand.New(rand.NewPCG(1, 2)), tc.spec, B)
			batch := nn.Batch{X: x, Labels: labels}
			grad := make([]float64, m.NumParams())
			rule := clipping.Flat{C: 1}
			var nonprivate, dp time.Duration
			step := func(private bool) {
				t0 := time.Now()
				var err error
				if private {
					_, err = m.ClippedGradient(batch, rule, grad)
				} else {
					_, err = m.Gradient(batch, grad)
				}
				if err != nil {
					b.Fatal(err)
				}
				if private {
					dp += time.Since(t0)
				} else {
					nonprivate += time.Since(t0)
				}
			}
			i := 0
			for b.Loop() {
				step(i%2 == 0)
				step(i%2 != 0)
				i++
			}
			b.ReportMetric(dp.Seconds()/nonprivate.Seconds(), "dp/nonprivate")
		})
	}
}
