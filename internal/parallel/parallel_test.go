package parallel

import (
	"sync"
	"testing"
)

func TestForCoversEachIndexOnce(t *testing.T) {
	for _, tc := range []struct{ workers, n, chunk int }{
		{1, 10, 3}, {2, 10, 3}, {4, 100, 7}, {8, 3, 1}, {2, 1, 5}, {3, 0, 2}, {2, 5, 0},
	} {
		seen := make([]int, tc.n)
		var mu sync.Mutex
		busy := make([]bool, max(tc.workers, 1))
		For(tc.workers, tc.n, tc.chunk, func(w, lo, hi int) {
			mu.Lock()
			if w < 0 || w >= len(busy) || busy[w] {
				t.Errorf("%+v: worker %d out of range or already busy", tc, w)
			}
			busy[w] = true
			mu.Unlock()
			if hi-lo > max(tc.chunk, 1) || lo >= hi {
				t.Errorf("%+v: range [%d, %d)", tc, lo, hi)
			}
			for i := lo; i < hi; i++ {
				seen[i]++
			}
			mu.Lock()
			busy[w] = false
			mu.Unlock()
		})
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("%+v: index %d visited %d times", tc, i, c)
			}
		}
	}
}
