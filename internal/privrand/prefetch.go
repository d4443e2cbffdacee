package privrand

import (
	"bytes"
	"math/rand/v2"
)

// A Gaussian draw made ahead of time. A private step's noise does not depend on the data,
// so the next step's standard normals can be drawn while the step before it computes its
// gradients: on a copy of the generator, in a goroutine, so that the draw (about 2 ms for
// 200,000 values) no longer waits for the gradients, nor they for it. The values are the
// ones the generator would have drawn, in the same order, and the generator is advanced
// past them only when they are used: a prefetch changes no output bit, no checkpoint, and
// a prefetch that is not used (another draw came first, or the run stopped) costs only the
// work of drawing it.
type prefetch struct {
	from []byte        // the generator's encoding when the draw started
	z    []float64     // the draw, once done is closed
	end  []byte        // the generator's encoding after the draw
	done chan struct{} // closed when z and end are written
}

// PrefetchGaussian starts drawing len(z) standard normals into z in the background, from a
// copy of s's generator as it is now. An AddGaussian of len(z) values with std ≠ 0 on s,
// while s's generator is still in that state, then takes them (waiting for the draw if it
// has not finished) instead of drawing, and leaves the generator where the draw would
// have: bit for bit the same values and the same state as without the prefetch. Anything
// else that draws from s first makes the prefetch stale, and AddGaussian then draws as
// usual. One prefetch is pending at a time: a new one replaces it.
//
// z is the caller's buffer (so that a training loop reuses one): it is written until the
// next AddGaussian or PrefetchGaussian on s returns, and must not be read or written
// before. A Source with a prefetch pending must not be copied: the copy would share z.
func (s *Source) PrefetchGaussian(z []float64) {
	s.dropPrefetch()
	n := len(z)
	if n == 0 {
		return
	}
	from, err := s.src.MarshalBinary()
	if err != nil { // not reachable: ChaCha8's encoding does not fail
		return
	}
	p := &prefetch{from: from, done: make(chan struct{})}
	s.pre = p
	go func() {
		defer close(p.done)
		var cc rand.ChaCha8
		if cc.UnmarshalBinary(from) != nil {
			return
		}
		r := rand.New(&cc)
		for j := range z {
			z[j] = r.NormFloat64()
		}
		end, err := cc.MarshalBinary()
		if err != nil {
			return
		}
		p.z, p.end = z, end
	}()
}

// dropPrefetch waits for a pending prefetch and discards it.
func (s *Source) dropPrefetch() {
	if p := s.pre; p != nil {
		s.pre = nil
		<-p.done
	}
}

// takePrefetch adds std·z of a pending prefetch of len(v) values drawn from s's present
// state to v and advances s past them, or says it cannot (and drops any prefetch).
func (s *Source) takePrefetch(v []float64, std float64) bool {
	p := s.pre
	if p == nil {
		return false
	}
	s.dropPrefetch()
	if std == 0 || p.z == nil || len(p.z) != len(v) {
		return false
	}
	now, err := s.src.MarshalBinary()
	if err != nil || !bytes.Equal(now, p.from) || s.src.UnmarshalBinary(p.end) != nil {
		return false
	}
	addScaled(v, std, p.z)
	s.taken++
	return true
}

// addScaled adds std·z[j] to v[j]: the arithmetic of AddGaussian's loop, on values drawn
// ahead.
func addScaled(v []float64, std float64, z []float64) {
	z = z[:len(v)]
	for j := range v {
		v[j] += std * z[j]
	}
}
