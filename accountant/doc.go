// Package accountant tracks the privacy spent by differentially private
// training and calibrates noise to a privacy budget.
//
// It implements the Rényi DP (RDP) accountant of the Poisson-subsampled
// Gaussian mechanism (Mironov, Talwar and Zhang 2019), as in TF Privacy and
// Opacus: a Ledger adds up the RDP of every recorded step at a list of Rényi
// orders and converts the total into an (ε, δ) guarantee, by Theorem 21 of
// Balle et al. (2020) by default or by the classic conversion of Mironov (2017).
//
// A training loop records each noisy step and asks for ε when it reports:
//
//	ledger := accountant.NewLedger()
//	for step := range steps {
//		// … clip, add N(0, (z·C)²) noise …
//		if err := ledger.Record(q, z, 1); err != nil { … }
//	}
//	spent, err := ledger.Epsilon(1e-5) // spent.Epsilon, spent.Order, spent.AtEdge
//
// Steps may differ in q and z (ADP-SGD changes z every step). A Ledger is a
// json.Marshaler and json.Unmarshaler so it travels inside checkpoints; a
// restored ledger continues exactly as the original would have.
//
// Beside RDP, the PLD accountant (privacy loss distributions with a
// pessimistic "connect the dots" discretisation, composed by FFT) gives a
// tighter upper bound, typically 5–10 % lower ε. Both implement the
// Accountant interface; WithAccountant(PLD{}) makes a Ledger, CalibrateNoise
// and the calibrations built on them use it. A Ledger always stores its
// history (q, z, steps), so any accountant can recompute ε from it; a loaded
// ledger's RDP totals are checked against that history (ErrTotalsMismatch).
//
// Before training, CalibrateNoise finds the smallest noise multiplier that
// meets a target ε for a fixed plan, and Calibrate does the same for any
// schedule whose ε decreases in a scale parameter.
//
// TuningRDP and TuningEpsilon bound a private hyperparameter search (Papernot
// and Steinke 2022): a random number of trials, K from a truncated negative
// binomial or Poisson distribution (Trials), of which only the best is
// released, from one trial's RDP curve.
//
// The package also holds the closed-form calibrations used by the seed
// papers (the DP-LSSGD Theorem 1 noise, the Gaussian mechanism, the extended
// advanced composition of ADP-SGD, and a zCDP calibration for full-batch
// gradient methods). They exist for reproducing those papers; the Ledger is
// the default and gives far tighter ε.
package accountant
