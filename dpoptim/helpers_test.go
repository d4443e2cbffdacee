package dpoptim

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// fakeRecorder keeps every Record call; err, if set, is returned instead.
type fakeRecorder struct {
	calls []recordCall
	err   error
}

type recordCall struct {
	q, z  float64
	steps int
}

func (f *fakeRecorder) Record(q, z float64, steps int) error {
	if f.err != nil {
		return f.err
	}
	f.calls = append(f.calls, recordCall{q, z, steps})
	return nil
}

var errRecorder = errors.New("recorder refused")

// quadratic is f(w) = ½ Σ λ_i (w_i − w*_i)², strongly convex with minimiser w*.
type quadratic struct {
	lambda, opt []float64
}

func newQuadratic(d int, lo, hi float64, seed uint64) quadratic {
	rng := rand.New(rand.NewPCG(seed, 99))
	q := quadratic{lambda: make([]float64, d), opt: make([]float64, d)}
	for i := range q.lambda {
		q.lambda[i] = lo + (hi-lo)*float64(i)/float64(max(d-1, 1))
		q.opt[i] = 4*rng.Float64() - 2
	}
	return q
}

// gradSum writes scale·∇f(w) into dst: with scale = q·n, a Private step with z = 0
// turns it back into ∇f(w).
func (q quadratic) gradSum(dst, w []float64, scale float64) {
	for i := range w {
		dst[i] = scale * q.lambda[i] * (w[i] - q.opt[i])
	}
}

func (q quadratic) maxError(w []float64) float64 {
	e := 0.0
	for i := range w {
		e = math.Max(e, math.Abs(w[i]-q.opt[i]))
	}
	return e
}

func mustPrivate(t testing.TB, rule Rule, cfg PrivateConfig) *Private {
	t.Helper()
	p, err := NewPrivate(rule, cfg)
	if err != nil {
		t.Fatalf("NewPrivate(%s): %v", rule.Name(), err)
	}
	return p
}

func equalBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
