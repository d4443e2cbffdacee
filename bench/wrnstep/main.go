// Command wrnstep times the private training step of a built-in model (default wrn-16-4,
// issue 27 item 5) and reports its peak memory:
//
//	go run ./bench/wrnstep                     # wrn-16-4, logical batch 256, 256 per call
//	go run ./bench/wrnstep -physical 64        # the same step in 4 calls of 64 rows
//	go run ./bench/wrnstep -model resnet-klause -steps 5
//
// A step is what DP-SGD does per logical batch (models' BenchmarkStep, mode dp): the
// forward pass, the backward pass to every layer's pre-activation, per-example gradients
// clipped to L2 norm 1 and summed (nn.Model.ClippedGradient, once per physical call),
// Gaussian noise on every coordinate, the ledger's record and an SGD update, float32 on
// the native engine, on a fixed random batch. After -warmup untimed steps it prints, per
// timed step, the wall time and the process's CPU time (getrusage: on a machine shared
// with other work, CPU time is what the step costs), then the median and range of
// examples/s by wall time and by CPU time, the achieved GFLOP/s at -gflop per example
// (2.3 for wrn-16-4: forward, input gradients and per-example weight gradients, each
// about 0.78 GFLOP), its fraction of -peak, and the peak resident set size (ru_maxrss:
// the most memory the process ever held, model and batch buffers included).
//
// The same step is BenchmarkStep/dp/wrn-16-4 in package models (go test -run '^$' -bench
// 'Step/dp/wrn-16-4/' ./models, examples/s and cpu-ms/op); its peak memory is the
// "Maximum resident set size" that /usr/bin/time -v prints for the test binary (go test -c
// -o /tmp/models.test ./models, then /usr/bin/time -v /tmp/models.test -test.run '^$'
// -test.bench …), which holds every benchmark's models, not the step's alone.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

func main() {
	os.Exit(run())
}

func run() int {
	model := flag.String("model", "wrn-16-4", "built-in model to time")
	batch := flag.Int("batch", 256, "logical batch: examples per step")
	physical := flag.Int("physical", 0, "rows per call (0: the whole batch in one call)")
	steps := flag.Int("steps", 10, "timed steps")
	warmup := flag.Int("warmup", 1, "untimed steps first")
	gflop := flag.Float64("gflop", 2.3, "GFLOP per example of a private step (for the FLOP rate)")
	peak := flag.Float64("peak", 0, "the machine's FLOP peak in GFLOP/s (0: cores × 64 FLOP/cycle × -ghz)")
	ghz := flag.Float64("ghz", 2.1, "clock for the default -peak (fp32 FMA on two 512-bit pipes: 64 FLOP/cycle)")
	memProfile := flag.String("memprofile", "", "write a heap profile (live objects after the last step: what holds the memory) to this file")
	flag.Parse()
	if *physical <= 0 {
		*physical = *batch
	}
	if *batch <= 0 || *batch%*physical != 0 || *steps <= 0 || *warmup < 0 {
		fmt.Fprintf(os.Stderr, "wrnstep: -batch %d must be a positive multiple of -physical %d, -steps positive\n", *batch, *physical)
		return 2
	}
	var spec nn.Spec
	for _, s := range models.Builtin() {
		if s.Name == *model {
			spec = s
		}
	}
	if spec.Name == "" {
		fmt.Fprintf(os.Stderr, "wrnstep: no built-in model %q (-model)\n", *model)
		return 2
	}
	m, err := nn.New(spec, *physical, nn.WithSeed(1))
	if err != nil {
		fmt.Fprintf(os.Stderr, "wrnstep: %v\n", err)
		return 1
	}
	size := 1
	for _, d := range spec.InputShape {
		size *= d
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, *batch*size)
	for j := range x {
		x[j] = rng.Float32()
	}
	labels := make([]int, *batch)
	for i := range labels {
		labels[i] = rng.IntN(spec.NumClasses)
	}
	grad := make([]float64, m.NumParams())
	params := make([]float64, m.NumParams())
	rule := clipping.Flat{C: 1}
	opt, err := dpoptim.NewPrivate(dpoptim.NewSGD(dpoptim.Constant(1e-3)), dpoptim.PrivateConfig{
		NoiseMultiplier: 1.1, ClipNorm: rule.Bound(), SampleRate: float64(*batch) / 50000,
		DatasetSize: 50000, Recorder: accountant.NewLedger(), Noise: dpoptim.NewSeededNoise(1),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "wrnstep: %v\n", err)
		return 1
	}
	step := func() error {
		clear(grad)
		for lo := 0; lo < *batch; lo += *physical {
			b := nn.Batch{X: x[lo*size : (lo+*physical)*size], Labels: labels[lo : lo+*physical]}
			if _, err := m.ClippedGradient(b, rule, grad); err != nil {
				return err
			}
		}
		m.Params(params)
		if err := opt.Step(params, grad, *batch); err != nil {
			return err
		}
		return m.SetParams(params)
	}
	fmt.Printf("%s: %d parameters, engine %v, logical batch %d in calls of %d, GOMAXPROCS %d\n",
		spec.Name, m.NumParams(), m.Engine(), *batch, *physical, runtime.GOMAXPROCS(0))
	for range *warmup {
		if err := step(); err != nil {
			fmt.Fprintf(os.Stderr, "wrnstep: %v\n", err)
			return 1
		}
	}
	var wall, cpu []float64 // examples/s
	for s := range *steps {
		t0, c0 := time.Now(), cpuTime()
		if err := step(); err != nil {
			fmt.Fprintf(os.Stderr, "wrnstep: %v\n", err)
			return 1
		}
		w, c := time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
		wall = append(wall, float64(*batch)/w)
		// CPU time over all cores: examples per CPU-second, times the cores the step may use.
		cpu = append(cpu, float64(*batch)/c*float64(runtime.GOMAXPROCS(0)))
		fmt.Printf("step %d: %.2f s wall, %.2f s CPU\n", s+1, w, c)
	}
	if *peak <= 0 {
		*peak = float64(runtime.GOMAXPROCS(0)) * 64 * *ghz
	}
	report := func(what string, v []float64) {
		med := median(v)
		fmt.Printf("%-28s median %.1f examples/s (range %.1f–%.1f, %d steps) = %.0f GFLOP/s, %.0f %% of %.0f GFLOP/s\n",
			what, med, slices.Min(v), slices.Max(v), len(v), med**gflop, 100*med**gflop / *peak, *peak)
	}
	report("wall time:", wall)
	report("CPU time × GOMAXPROCS:", cpu)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		fmt.Printf("peak RSS: %.0f MiB (ru_maxrss)\n", float64(ru.Maxrss)/1024)
	}
	if *memProfile != "" {
		runtime.GC() // the live heap, as of the last step
		f, err := os.Create(*memProfile)
		if err == nil {
			err = pprof.Lookup("heap").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "wrnstep: -memprofile: %v\n", err)
			return 1
		}
		runtime.KeepAlive(m)
	}
	return 0
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
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
