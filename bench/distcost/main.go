// Command distcost measures what data-parallel training (train -distributed mpi,
// docs/distributed.md) adds to a step and what a step computes, for the scaling model of
// docs/distributed.md.
//
//	go build -tags mpi -o /tmp/distcost ./bench/distcost
//	mpirun --oversubscribe -np 4 /tmp/distcost            # communication per step
//	/tmp/distcost -compute                                 # one process: examples/s per core
//
// Under mpirun it times, for the parameter count P of every built-in model, the collective
// calls of one training step exactly as the trainer makes them (training/distributed.go):
// an allreduce of P + 20 float64 values (the clipped sum, the step's scalars and the
// agreement values, and the stop flag) and a broadcast of P + 2 (the parameters, C_t, a
// status). Each repetition starts after a barrier and its time is rank 0's; it prints the
// median and the 10th and 90th percentiles over -reps repetitions after -warmup.
//
// With -compute (no mpirun) it times the clipped per-example gradient step
// (Model.ClippedGradient) of the models without a front end on random inputs at
// physical batch -batch, on one core (GOMAXPROCS=1), and prints examples per second of
// CPU time (the process's user+sys time, getrusage: what a core computes, even on a
// machine busy with other work) beside examples per second of wall time.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/mpi"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

func main() {
	reps := flag.Int("reps", 40, "timed repetitions per model")
	warmup := flag.Int("warmup", 5, "untimed repetitions first")
	compute := flag.Bool("compute", false, "time the clipped gradient step per core instead (one process, no MPI)")
	batch := flag.Int("batch", 64, "-compute: physical batch")
	flag.Parse()
	if *compute {
		os.Exit(measureCompute(*batch, *reps))
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "distcost: %v (or use -compute)\n", err)
		os.Exit(2)
	}
	defer w.Finalize()
	if w.Rank() == 0 {
		fmt.Printf("ranks %d; rank 0 may use %d CPU(s)\n", w.Size(), runtime.NumCPU())
		fmt.Printf("%-22s %10s %14s %12s %12s %12s\n", "model", "params P", "MB/rank (ring)", "median ms", "p10 ms", "p90 ms")
	}
	seen := map[int]bool{}
	for _, s := range models.Builtin() {
		m, err := nn.New(s, 1)
		if err != nil {
			fmt.Fprintf(os.Stderr, "distcost: %s: %v\n", s.Name, err)
			w.Abort(1)
		}
		p := m.NumParams()
		if seen[p] {
			continue // the same size as a model above (its other activation)
		}
		seen[p] = true
		sum, bcast := make([]float64, p+20), make([]float64, p+2)
		var times []float64
		for i := range *warmup + *reps {
			if err := w.Barrier(); err != nil {
				fmt.Fprintln(os.Stderr, "distcost:", err)
				w.Abort(1)
			}
			start := time.Now()
			if err := w.AllreduceSum(sum); err != nil {
				fmt.Fprintln(os.Stderr, "distcost:", err)
				w.Abort(1)
			}
			if err := w.Broadcast(bcast, 0); err != nil {
				fmt.Fprintln(os.Stderr, "distcost:", err)
				w.Abort(1)
			}
			if i >= *warmup {
				times = append(times, time.Since(start).Seconds()*1e3)
			}
		}
		if w.Rank() == 0 {
			slices.Sort(times)
			n := float64(w.Size())
			// A ring allreduce sends and receives 2(N−1)/N of the vector per rank; a
			// broadcast (pipelined) about one vector.
			mb := (2*(n-1)/n*float64(p+20) + float64(p+2)) * 8 / 1e6
			fmt.Printf("%-22s %10d %14.2f %12.3f %12.3f %12.3f\n", s.Name, p, mb, pct(times, 0.5), pct(times, 0.1), pct(times, 0.9))
		}
	}
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return math.NaN()
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
}

func pct(sorted []float64, q float64) float64 {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// measureCompute prints the clipped per-example gradient step's examples/s on one core
// for every built-in model without a front end.
func measureCompute(batch, reps int) int {
	runtime.GOMAXPROCS(1)
	fmt.Printf("clipped gradient step, one core, physical batch %d, float32, median of %d batches\n", batch, reps)
	fmt.Printf("%-22s %10s %14s %14s %16s\n", "model", "params P", "CPU ms/batch", "wall ms/batch", "examples/CPU s")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range models.Builtin() {
		m, err := nn.New(s, batch, nn.WithSeed(1))
		if err != nil {
			fmt.Fprintf(os.Stderr, "distcost: %s: %v\n", s.Name, err)
			return 1
		}
		if m.HasFrontEnd() {
			continue // its features are computed once per data set, not per step
		}
		size := 1
		for _, d := range m.InputShape() {
			size *= d
		}
		b := nn.Batch{X: make([]float32, batch*size), Labels: make([]int, batch)}
		for i := range b.X {
			b.X[i] = rng.Float32()
		}
		for i := range b.Labels {
			b.Labels[i] = rng.IntN(m.NumClasses())
		}
		grad := make([]float64, m.NumParams())
		var wall, cpu []float64
		for i := range 2 + reps {
			start, startCPU := time.Now(), cpuSeconds()
			if _, err := m.ClippedGradient(b, clipping.Flat{C: 1}, grad); err != nil {
				fmt.Fprintf(os.Stderr, "distcost: %s: %v\n", s.Name, err)
				return 1
			}
			if i >= 2 {
				wall = append(wall, time.Since(start).Seconds())
				cpu = append(cpu, cpuSeconds()-startCPU)
			}
		}
		slices.Sort(wall)
		slices.Sort(cpu)
		fmt.Printf("%-22s %10d %14.2f %14.2f %16.0f\n", s.Name, m.NumParams(), pct(cpu, 0.5)*1e3, pct(wall, 0.5)*1e3, float64(batch)/pct(cpu, 0.5))
	}
	return 0
}
