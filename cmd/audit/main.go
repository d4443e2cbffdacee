// Command audit checks the privacy of the project's DP-SGD empirically, with the one-run
// membership audit of Steinke, Nasr & Jagielski ("Privacy Auditing with One (1) Training
// Run", NeurIPS 2023): it trains logistic regression on MNIST digits once, with canaries
// each included by a fair coin, guesses which canaries were trained on, and turns the
// correct guesses into a lower bound on ε that holds with the chosen confidence. It prints
// that bound beside the ε the accountant reports for the run.
//
//	audit                              # ε = 2, 5,000 canaries, 95 % confidence, δ = 1e-5
//	audit -epsilon 4 -canaries 10000 -seed 1 -json
//
// Exit status: 0 the bound is below the accountant's ε; 3 it is above (the mechanism does
// not deliver its ε); 1 the audit failed; 2 bad command line; 130 interrupted.
package main

import (
	"os"

	"github.com/privtrain/privtrain/cmd/internal/auditcmd"
)

func main() { os.Exit(auditcmd.Main(os.Args[1:])) }
