// Command privacy computes the privacy spent by a DP-SGD training plan and
// the noise multiplier a privacy budget calls for, with the RDP accountant of
// package accountant.
//
//	privacy epsilon -n 60000 -batch 256 -epochs 60 -noise 1.1 -delta 1e-5
//	privacy noise   -n 60000 -batch 256 -epochs 60 -epsilon 3 -delta 1e-5
//
// Run "privacy epsilon -help" or "privacy noise -help" for the flags.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
