// Package safeiotest measures what a reader allocates, for the tests that feed the readers
// hostile files (bombs) and check that refusing them costs little memory.
package safeiotest

import (
	"io"
	"runtime"
)

// Allocated returns the bytes that the heap handed out while f ran (runtime.MemStats'
// TotalAlloc, so memory freed again counts too: a bound on it bounds the peak heap f
// added). Other goroutines' allocations count as well: run it outside parallel tests.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Zeros is an endless stream of zero bytes, to stream a bomb's body without holding it.
var Zeros io.Reader = zeros{}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
