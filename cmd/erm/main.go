// Command erm trains a regularised linear model with one of the private ERM
// solvers of package erm and reports its objective, its excess empirical
// risk over the certified optimum, its accuracy (or MSE) and the privacy it
// spent.
//
//	erm -solver dp-scd -loss logistic -data phishing.txt -epsilon 1 -delta 1e-3
//	erm -solver dp-nag-opt -synthetic -lambda 0.02 -iters 1000 -step 0.1 -x0 10 -spectral-l -json
//	erm reproduce                       # regenerates docs/results/erm.md
//
// Data files (LIBSVM, or CSV when the name ends in .csv; gzip allowed) are
// normalised as the papers do: each feature divided by its largest |value|,
// then each example scaled to unit L2 norm. That step reads the whole data
// set and is not itself private. Labels of classification losses must take
// two values (mapped to ±1). -synthetic draws the DP accelerated methods
// paper's data (covariates in [0,1]^d, not normalised unless -normalize, or
// for dp-scd and seq-dp-scd, which need unit-norm rows, unless -raw).
//
// Bad flags exit with status 2 and a one-line message naming the flag.
package main

import (
	"os"

	"github.com/privtrain/privtrain/cmd/internal/ermcmd"
)

func main() { os.Exit(ermcmd.Main(os.Args[1:])) }
