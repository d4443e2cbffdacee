// Package faults breaks the private training mechanism on purpose, for the tests of
// package audit: an audit is only worth something if it flags a mechanism that does not
// deliver its ε. Each Fault is one classic DP-SGD bug, switched on by a single-line hook
// in the production code (clipping, dpoptim, nn) that is a no-op unless a test enabled it.
//
// Only tests can switch a fault on: Enable takes the running test and switches the fault
// off again when that test ends. The package is internal, so code outside this module
// cannot import it, and nothing in the module calls Enable outside a _test.go file.
package faults

import "sync/atomic"

// Fault is one deliberately broken piece of the mechanism.
type Fault uint32

const (
	// NoClip turns per-example clipping off: every clip factor is 1 (clipping.clipFactor).
	NoClip Fault = 1 << iota
	// NoNoise adds no noise to the clipped sum (dpoptim.Private.Step).
	NoNoise
	// NoiseDiv10 adds a tenth of the calibrated noise (dpoptim.Private.Step).
	NoiseDiv10
	// RealisedBatch divides the noisy sum by the realised batch size (at least 1) instead
	// of the expected one, q·n (dpoptim.Private.Step).
	RealisedBatch
	// LedgerReset drops the checkpoint's ledger on resume, so the resumed run's ε counts
	// only the steps after the resume (training.Trainer.Restore).
	LedgerReset
)

var active atomic.Uint32

// Active reports whether f is switched on. It costs one atomic load.
func Active(f Fault) bool { return active.Load()&uint32(f) != 0 }

// TB is the part of testing.TB that Enable needs (an interface here, so that the
// production binaries that carry the hooks do not link package testing).
type TB interface {
	Helper()
	Cleanup(func())
}

// Enable switches f on until the test tb (a *testing.T) ends. Tests that enable a fault
// must not run in parallel with tests of a mechanism that must be intact.
func Enable(tb TB, f Fault) {
	tb.Helper()
	active.Or(uint32(f))
	tb.Cleanup(func() { active.And(^uint32(f)) })
}

// Noise returns the noise standard deviation and the normaliser 1/(q·n) that
// dpoptim.Private.Step should use, given the correct ones and the realised batch size:
// unchanged unless NoNoise, NoiseDiv10 or RealisedBatch is on.
func Noise(std, inv float64, batchSize int) (float64, float64) {
	a := active.Load()
	if a == 0 {
		return std, inv
	}
	if a&uint32(NoNoise) != 0 {
		std = 0
	}
	if a&uint32(NoiseDiv10) != 0 {
		std /= 10
	}
	if a&uint32(RealisedBatch) != 0 {
		inv = 1 / float64(max(batchSize, 1))
	}
	return std, inv
}
