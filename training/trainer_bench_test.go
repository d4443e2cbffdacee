package training_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// BenchmarkTrainerEpoch times one private epoch of the default command's configuration
// (MNIST CNN, tanh, DP-SGD, expected batch 2048 of the 8,000 embedded digits, so four
// Poisson-sampled steps) for several physical batch sizes, and reports examples/s. The
// physical batch trades per-call overhead against the padding of each step's last chunk:
//
//	go test -run '^$' -bench TrainerEpoch -count 5 ./nn
func BenchmarkTrainerEpoch(b *testing.B) {
	train, _ := embedded(b, 8000)
	for _, physical := range []int{32, 64, 128, 256, 512} {
		b.Run(fmt.Sprintf("cnn/physical=%d", physical), func(b *testing.B) {
			m := newModel(b, models.MNISTCNN(models.Tanh), physical, nn.WithSeed(1))
			examples := 0
			tr := newTrainer(b, m, training.TrainerConfig{
				Data:      training.Data{Train: train},
				Rule:      dpoptim.NewSGD(dpoptim.Constant(4)),
				Schedule:  training.Schedule{BatchSize: 2048, Epochs: b.N},
				Seed:      seedPtr(1),
				Privacy:   &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 3, Delta: 1e-5},
				Callbacks: training.Callbacks{OnStep: func(p training.StepProgress) error { examples += p.BatchSize; return nil }},
			})
			b.ResetTimer()
			if _, err := tr.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(examples)/b.Elapsed().Seconds(), "examples/s")
		})
	}
}

// BenchmarkTrainerVsStep measures issue 12's target that the default cmd/train run
// (MNIST CNN, tanh, DP-SGD, expected batch 2048 of the 8,000 embedded digits, physical
// batch 128, the 2,000 test digits evaluated after every epoch) reaches ≥ 85 % of the
// bare private step's throughput at the same physical batch; the cifar10-cnn-tanh case
// does the same for the CIFAR-10 CNN on 4,096 random 3×32×32 images (512 test images,
// expected batch 1024; no CIFAR-10 files are needed). Each iteration is one trainer epoch
// — sampling, loading, chunking, the ragged last chunk, noise, accounting and the test
// evaluation included — and after each of its steps, in its OnStep callback, the bare
// steps BenchmarkStep times (ClippedGradient, Gaussian noise and an SGD update on a fixed
// batch of 128) over as many examples. It reports both throughputs (training examples per
// second of wall time), the process CPU milliseconds per 1,000 training examples of each,
// trainer/step, the throughput ratio, and trainer/step-cpu, the same from CPU time.
//
//	go test -run '^$' -bench 'TrainerVsStep/mnist' -count 5 ./nn
func BenchmarkTrainerVsStep(b *testing.B) {
	const physical = 128
	b.Run("mnist-cnn-tanh", func(b *testing.B) {
		const n = 8000
		train, test := embedded(b, n)
		trainerVsStep(b, models.MNISTCNN(models.Tanh), train, test, 2048, physical)
	})
	b.Run("cifar10-cnn-tanh", func(b *testing.B) {
		train, test := benchImages(b, []int{3, 32, 32}, 4096, 1), benchImages(b, []int{3, 32, 32}, 512, 2)
		trainerVsStep(b, models.CIFAR10CNN(models.Tanh), train, test, 1024, physical)
	})
}

func trainerVsStep(b *testing.B, spec nn.Spec, train, test datasets.Dataset, logical, physical int) {
	n := train.Len()
	m := newModel(b, spec, physical, nn.WithSeed(1))
	step := newBareStep(b, spec, physical, n)
	step()
	var took, cpu [2]time.Duration
	var examples [2]int
	var last time.Time
	var lastCPU time.Duration
	epoch := 0
	for b.Loop() {
		epoch++
		tr := newTrainer(b, m, training.TrainerConfig{
			Data: training.Data{Train: train, Test: test}, Rule: dpoptim.NewSGD(dpoptim.Constant(3)),
			Schedule: training.Schedule{BatchSize: logical, Epochs: 1},
			Seed:     seedPtr(uint64(epoch)),
			Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1.35, Delta: 1e-5},
			// After each of the trainer's steps (and the epoch's evaluation, which comes
			// before the last step's callback), as many examples of bare steps: the two
			// alternate every ~0.1 s, so that the machine's load drifts hit both alike.
			Callbacks: training.Callbacks{OnStep: func(p training.StepProgress) error {
				t0, c0 := time.Now(), cpuTime()
				took[0] += t0.Sub(last)
				cpu[0] += c0 - lastCPU
				examples[0] += p.BatchSize
				steps := (p.BatchSize + physical - 1) / physical
				for range steps {
					step()
				}
				examples[1] += steps * physical
				took[1] += time.Since(t0)
				cpu[1] += cpuTime() - c0
				last, lastCPU = time.Now(), cpuTime()
				return nil
			}},
		})
		last, lastCPU = time.Now(), cpuTime()
		if _, err := tr.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	tput := func(k int) float64 { return float64(examples[k]) / took[k].Seconds() }
	b.ReportMetric(tput(0), "trainer-examples/s")
	b.ReportMetric(tput(1), "step-examples/s")
	b.ReportMetric(tput(0)/tput(1), "trainer/step")
	perExample := func(k int) float64 { return cpu[k].Seconds() / float64(examples[k]) }
	b.ReportMetric(perExample(0)*1e6, "trainer-cpu-ms/1k")
	b.ReportMetric(perExample(1)*1e6, "step-cpu-ms/1k")
	// The same ratio from CPU time, which a loaded machine disturbs far less than wall
	// time (but which does not see a core idling while one goroutine loads or packs).
	b.ReportMetric(perExample(1)/perExample(0), "trainer/step-cpu")
}

// newBareStep is BenchmarkStep's dp step (models/bench_test.go) at batch size batch on a
// fixed random batch: clipped per-example gradients summed, Gaussian noise, an SGD update.
func newBareStep(b *testing.B, spec nn.Spec, batch, datasetSize int) func() {
	m := newModel(b, spec, batch, nn.WithSeed(1))
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, batch*num.Prod(m.InputShape()))
	for j := range x {
		x[j] = rng.Float32()
	}
	labels := make([]int, batch)
	for j := range labels {
		labels[j] = rng.IntN(spec.NumClasses)
	}
	bt := nn.Batch{X: x, Labels: labels}
	grad, params := make([]float64, m.NumParams()), make([]float64, m.NumParams())
	rule := clipping.Flat{C: 1}
	opt, err := dpoptim.NewPrivate(dpoptim.NewSGD(dpoptim.Constant(1e-3)), dpoptim.PrivateConfig{
		NoiseMultiplier: 1.35, ClipNorm: rule.Bound(), SampleRate: float64(batch) / float64(datasetSize),
		DatasetSize: datasetSize, Recorder: accountant.NewLedger(), Noise: dpoptim.NewSeededNoise(1),
	})
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		clear(grad)
		if _, err := m.ClippedGradient(bt, rule, grad); err != nil {
			b.Fatal(err)
		}
		m.Params(params)
		if err := opt.Step(params, grad, batch); err != nil {
			b.Fatal(err)
		}
		if err := m.SetParams(params); err != nil {
			b.Fatal(err)
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

// benchImages is n images of the given shape with random bytes and labels (10 classes).
func benchImages(b *testing.B, shape []int, n int, seed uint64) datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 3))
	pixels, labels := make([]byte, n*num.Prod(shape)), make([]byte, n)
	for j := range pixels {
		pixels[j] = byte(rng.IntN(256))
	}
	for j := range labels {
		labels[j] = byte(rng.IntN(10))
	}
	ds, err := datasets.NewImages(shape, 10, pixels, labels)
	if err != nil {
		b.Fatal(err)
	}
	return ds
}

// BenchmarkScatterLinearEpoch times one private epoch of scatter-linear-mnist (DP-SGD,
// expected batch 2048 of the 8,000 embedded digits, physical batch 2048) on its front-end
// features, which the trainer computes once before the timer starts, and reports examples/s. With the
// GroupNorm and the Flatten after the scattering in the front end, a step runs the dense
// layer only:
//
//	go test -run '^$' -bench ScatterLinearEpoch -count 5 ./nn
func BenchmarkScatterLinearEpoch(b *testing.B) {
	train, _ := embedded(b, 8000)
	m := newModel(b, models.ScatterLinearMNIST(), 2048, nn.WithSeed(1))
	examples := 0
	tr := newTrainer(b, m, training.TrainerConfig{
		Data: training.Data{Train: train}, Rule: dpoptim.NewSGD(dpoptim.Constant(4)),
		Schedule: training.Schedule{BatchSize: 2048, Epochs: b.N}, Seed: seedPtr(1),
		Privacy: &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 3, Delta: 1e-5},
		Callbacks: training.Callbacks{
			OnStep: func(p training.StepProgress) error { examples += p.BatchSize; return nil },
			// The features are computed before the first step: time the steps only.
			OnFrontEnd: func(p training.FrontEndProgress) {
				if p.Done {
					b.ResetTimer()
				}
			},
		},
	})
	if _, err := tr.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(examples)/b.Elapsed().Seconds(), "examples/s")
}
