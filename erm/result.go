package erm

// Result is what a solver releases and what it spent.
type Result struct {
	// X is the released model.
	X []float64
	// Epsilon and Delta are the privacy guarantee of the release: Delta is 0
	// for the pure-ε (Laplace) methods and Epsilon is +Inf with the noise off.
	Epsilon, Delta float64
	// Iterations counts the noisy releases made (outer iterations for the
	// gradient methods, inner steps for the SVRG family, mini-batch rounds
	// for DP-SCD); for DP-NAG-opt and DP-MASG-opt it is the re-selected T.
	Iterations int
	// Calibration describes the noise in one line, for logs and the CLI
	// ("Laplace b = 0.04, uniform over T = 100").
	Calibration string
	// Paper is set when the noise came from the DP-ERM-revisited paper's
	// printed formula (PaperConstant, papernoise.go): the run is then not DP
	// at Paper.Epsilon, and Epsilon is the proven ε for the σ used.
	Paper *PaperCalibration
}
