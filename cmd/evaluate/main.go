// Command evaluate measures the model of a checkpoint on a data set: accuracy, mean
// cross-entropy loss, per-class accuracy and the confusion matrix.
//
//	go run ./cmd/evaluate -checkpoint m.ckpt                  # the data set it was trained on, test split
//	go run ./cmd/evaluate -checkpoint m.ckpt -dataset fashion-mnist -json
//	go run ./cmd/evaluate -checkpoint c.ckpt -dataset cifar10 -data ~/data/cifar-10-binary.tar.gz
//	go run ./cmd/evaluate -checkpoint t.ckpt -dataset csv:moved/table.csv   # a csv: run's data elsewhere
//
// The data sets, -data and the flags of your own data are those of cmd/train (the same
// loader, cmd/internal/cli); without -dataset, the one the checkpoint was trained on (by its
// settings, else its recorded name), else mnist. For a run on csv:PATH, images:DIR or
// cifar100 the checkpoint's settings give the flags that read the data (-scale, -label,
// -header, -image-size, -channels, -labels) and the held-out test split (-test-fraction,
// -split-seed), so the test set is the one the trainer held out; a flag given overrides
// its setting, except that a -scale other than the run's is refused. It needs only the
// checkpoint's model: no privacy state, and it spends no privacy (metrics on the test
// split are not private anyway; metrics on -split train are computed on the raw training
// data and are not covered by ε).
//
// For a run trained with -validation FRACTION, the checkpoint's settings (validation,
// split-seed, validation-split) give the held-out split again (datasets.HashHoldOut of
// the training set, as cmd/train makes it; datasets.HoldOut, with a warning, for a
// checkpoint from before the content-hash split): -split train scores the examples the run trained on, without the
// held-out ones, and -split validation the held-out ones; the rebuilt training part must
// match the checkpoint's fingerprint of the data it trained on (size, labels and content).
// -split validation of a run without -validation is a usage error.
//
// Exit status: 0 success; 1 a damaged checkpoint or unreadable data; 2 bad command line or
// a data set that does not fit the model (one line on stderr names it).
package main

import (
	"os"

	"github.com/privtrain/privtrain/cmd/internal/evaluatecmd"
)

func main() { os.Exit(evaluatecmd.Main(os.Args[1:])) }
