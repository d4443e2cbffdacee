// Package data holds the examples that the private ERM solvers of package erm
// train on: a dense design matrix with one example per row, its labels, and
// the data-independent row-norm bounds that the privacy calibrations rely on.
//
// Four sources produce a Dataset:
//
//   - Synthetic draws the logistic-regression problem of the DP accelerated
//     methods paper (Kuru et al., Sec. 5), reproducibly from a seed.
//   - ReadLIBSVM parses the sparse text format of the LIBSVM collection (the
//     papers' Phishing, Adult, Covertype and YearPredictionMSD files).
//   - ReadCSV parses numeric CSV with a label column, such as the
//     breast_cancer.csv file shipped with scikit-learn.
//   - ReadAdult parses UCI Adult's raw adult.data / adult.test, and EncodeAdult
//     turns them into the DP-SCD paper's 81 features (dummy-coded, "?" imputed
//     by the mode, max-abs scaled, unit rows; erm/data/download pins the files).
//
// Read data carries no norm bounds. Normalize applies the papers'
// preprocessing (each feature divided by its largest absolute value, then
// each example scaled to unit L2 norm) and records the bounds ‖x_i‖₂ ≤ 1 and
// ‖x_i‖₁ ≤ √d. The per-feature scaling looks at the whole data set, so it is
// not itself private; the papers do it anyway and so does this package, which
// says so wherever it matters.
//
// A typical use:
//
//	f, _ := os.Open("phishing.txt")
//	ds, err := data.ReadLIBSVM(f, data.LIBSVMOptions{})
//	if err != nil { ... }
//	if err := ds.BinaryLabels(); err != nil { ... } // {0,1} or {1,2} -> {-1,+1}
//	ds.Normalize()
package data
