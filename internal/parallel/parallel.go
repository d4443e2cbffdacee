// Package parallel runs a loop over index ranges on several goroutines.
package parallel

import (
	"sync"
	"sync/atomic"
)

// For calls f(worker, lo, hi) for consecutive ranges [lo, hi) that together cover [0, n),
// each at most chunk long, on at most workers goroutines (worker in [0, workers) says whose
// scratch f may use: no two calls with the same worker run at once), and returns when every
// call has returned. Ranges are handed out one at a time, so a worker that another process
// slows down takes fewer of them. Worker 0 runs on the calling goroutine.
func For(workers, n, chunk int, f func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	chunk = max(chunk, 1)
	chunks := (n + chunk - 1) / chunk
	workers = max(min(workers, chunks), 1)
	if workers == 1 {
		for lo := 0; lo < n; lo += chunk {
			f(0, lo, min(lo+chunk, n))
		}
		return
	}
	var next atomic.Int64
	run := func(w int) {
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			lo := c * chunk
			f(w, lo, min(lo+chunk, n))
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(w)
		}()
	}
	run(0)
	wg.Wait()
}
