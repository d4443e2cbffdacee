// Command collectives exercises package mpi under mpirun for mpi_test.go: it prints one
// line per check on rank 0 ("ok …" or "FAIL …"), and with -abort CODE rank 1 calls Abort.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/privtrain/privtrain/internal/mpi"
)

func main() {
	abort := flag.Int("abort", 0, "rank 1 aborts the job with this status (0: no)")
	flag.Parse()
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r, n := w.Rank(), w.Size()
	if *abort != 0 {
		if r == 1 {
			w.Abort(*abort)
		}
		w.Barrier() // the others wait here until the abort ends them
		os.Exit(0)
	}
	// Sum: rank r contributes r and 2^r; the sums are n(n−1)/2 and 2^n − 1.
	buf := []float64{float64(r), float64(int(1) << r)}
	if err := w.AllreduceSum(buf); err != nil {
		fmt.Println("FAIL allreduce:", err)
		os.Exit(1)
	}
	check(r, buf[0] == float64(n*(n-1)/2) && buf[1] == float64(int(1)<<n-1), "allreduce %v for %d ranks", buf, n)
	// A long vector: element i of rank r is i+r, summed n·i + n(n−1)/2.
	long := make([]float64, 1<<20)
	for i := range long {
		long[i] = float64(i + r)
	}
	if err := w.AllreduceSum(long); err != nil {
		fmt.Println("FAIL allreduce:", err)
		os.Exit(1)
	}
	good := true
	for i, v := range long {
		good = good && v == float64(n*i+n*(n-1)/2)
	}
	check(r, good, "allreduce of 2^20 values")
	// Broadcast from the last rank: its values arrive unchanged, a negative zero and a
	// subnormal included.
	b := []float64{float64(r), math.Copysign(0, -1), 1e-310}
	if err := w.Broadcast(b, n-1); err != nil {
		fmt.Println("FAIL broadcast:", err)
		os.Exit(1)
	}
	ok := b[0] == float64(n-1) && math.Signbit(b[1]) && b[1] == 0 && b[2] == 1e-310
	all := []float64{0}
	if ok {
		all[0] = 1
	}
	w.AllreduceSum(all)
	check(r, all[0] == float64(n), "broadcast from rank %d on %v of %d ranks", n-1, all[0], n)
	if err := w.Finalize(); err != nil {
		fmt.Println("FAIL finalize:", err)
		os.Exit(1)
	}
}

func check(rank int, ok bool, format string, args ...any) {
	if rank != 0 {
		return
	}
	if ok {
		fmt.Printf("ok "+format+"\n", args...)
	} else {
		fmt.Printf("FAIL "+format+"\n", args...)
	}
}
