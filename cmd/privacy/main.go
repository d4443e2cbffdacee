// Command privacy computes the privacy spent by a DP-SGD training plan and
// the noise multiplier a privacy budget calls for, with the RDP and the PLD
// accountants of package accountant (side by side; -accountant rdp or pld
// picks one).
//
//	privacy epsilon -n 60000 -batch 256 -epochs 60 -noise 1.1 -delta 1e-5
//	privacy noise   -n 60000 -batch 256 -epochs 60 -epsilon 3 -delta 1e-5
//	privacy epsilon -accountant pld -q 0.0042667 -steps 14063 -noise 1.1 -json
//
// Run "privacy epsilon -help" or "privacy noise -help" for the flags.
package main

import (
	"os"

	"github.com/privtrain/privtrain/cmd/internal/privacycmd"
)

func main() { os.Exit(privacycmd.Main(os.Args[1:])) }
