// Command train trains a neural network with differential privacy and reports its test
// accuracy and the privacy it spent.
//
// With no flags it trains the MNIST CNN with DP-SGD on the MNIST sample built into the
// binary (8,000 training and 2,000 test digits) at ε = 3, δ = 1e-5, in a few minutes on a
// laptop:
//
//	go run ./cmd/train
//	go run ./cmd/train -model logreg -optimizer dp-adam -epsilon 1 -epochs 10
//	go run ./cmd/train -dataset fashion-mnist -checkpoint run.ckpt -metrics run.jsonl -plot run.png
//	go run ./cmd/train -resume run.ckpt -checkpoint run.ckpt   # continue an interrupted run
//	go run ./cmd/train -dataset csv:data.csv -label class -scale 0:100 -model mlp
//	go run ./cmd/train -dataset images:photos/ -image-size 28x28
//
// Your own data: -dataset csv:PATH (numeric features scaled by a declared -scale range,
// never by the data's own statistics) or images:DIR (one subfolder of PNG/JPEG images per
// class), with a seeded test split that holds out each example by a hash of its own
// content (-test-fraction, -split-seed), so that ε holds per file.
//
// Before the first step it prints the plan: sampling rate, steps, the noise multiplier
// calibrated for the target ε (or, with -noise, the ε the plan will spend). It never
// exceeds a target ε: a plan (or a resumed run) that would is refused. Ctrl-C finishes the
// current step, writes the checkpoint if -checkpoint is set, and exits with status 130.
//
// Run "train -help" for every flag. Exit status: 0 success, 1 failure while training or
// writing outputs, 2 bad command line (one line on stderr says what), 130 interrupted.
package main

import (
	"os"

	"github.com/privtrain/privtrain/cmd/internal/traincmd"
)

func main() { os.Exit(traincmd.Main(os.Args[1:])) }
