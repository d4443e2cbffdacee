package traincmd

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// The files a run reads and writes: the data sets of -dataset, the output files' checks
// and errors, and checkpoints signed under the key of cli.KeyEnv.

// loadData reads the training and test sets named by -dataset and -data (with the
// flags of your own data, as cmd/evaluate reads them back from a checkpoint); notes are
// what the user should know about the data. With -validation the test set is never
// evaluated, and test files of their own (MNIST's t10k files, CIFAR's test batch) are not read: test is
// nil, and a run can tune without them.
func loadData(o *options) (train, test datasets.Dataset, name string, notes []string, err error) {
	if o.validation > 0 {
		train, name, notes, err = cli.LoadTrainData(o.dataset, o.data, &o.own.DataFlags)
		return train, nil, name, notes, err
	}
	return cli.LoadData(o.dataset, o.data, &o.own.DataFlags)
}

// fileError is err about the file of -flagName path, naming both once (cli.FileError).
func fileError(flagName, path string, err error) error { return cli.FileError(flagName, path, err) }

// checkWritable checks, before the first step, that the output file of -flag can be
// written: its directory exists and takes a new file (a probe file is created and
// removed), and path is not a directory.
func checkWritable(flagName, path string) error {
	if path == "" {
		return nil
	}
	if err := cli.CheckOutput("-"+flagName, path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	probe, err := os.CreateTemp(dir, ".train-probe-*")
	if err != nil {
		return exit.Usagef("-%s %s: cannot write in %s: %s", flagName, path, dir, cli.StatReason(err))
	}
	name := probe.Name()
	probe.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("-%s %s: removing the probe file %s: %w", flagName, path, name, err)
	}
	return nil
}

// keyEnv names the environment variable that holds the checkpoint key (cli.KeyEnv).
const keyEnv = cli.KeyEnv

// checkpointKey returns the key of keyEnv, nil when the variable is not set; a key too
// short to be a key is a usage error.
func checkpointKey() ([]byte, error) { return cli.CheckpointKey() }

// checkKey refuses a key too short to be a key.
func checkKey() error {
	_, err := checkpointKey()
	return err
}

// saveCheckpoint writes -checkpoint, signed when keyEnv is set (cli.SaveCheckpoint).
func saveCheckpoint(path string, c *checkpoint.Training) error { return cli.SaveCheckpoint(path, c) }
