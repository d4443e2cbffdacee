package traincmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// newerCheckpoint compares the resumed checkpoint ck with the one at -checkpoint. When
// that one is a later state of the same run (more steps taken), resuming ck would
// discard steps whose privacy is already spent: without -allow-rewind that is a usage
// error; with it, a warning, and the newer checkpoint is returned so that the trainer's
// ledger keeps its steps. Otherwise it returns nil.
func newerCheckpoint(o *options, ck *checkpoint.Training, stderr io.Writer) (*checkpoint.Training, error) {
	if o.allowRewind && o.resume == "" {
		return nil, exit.Usagef("-allow-rewind applies to -resume FILE")
	}
	if err := checkKey(); err != nil {
		return nil, err
	}
	if ck == nil || o.checkpoint == "" {
		return nil, nil
	}
	if a, err := os.Stat(o.resume); err == nil {
		if b, err := os.Stat(o.checkpoint); err == nil && os.SameFile(a, b) {
			return nil, nil
		}
	}
	other, err := loadCheckpoint(o.checkpoint)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "train: warning: -checkpoint %s cannot be compared with -resume %s (%s); it will be overwritten\n", o.checkpoint, o.resume, exit.OneLine(err.Error()))
		}
		return nil, nil
	}
	if other.RunID == "" || other.RunID != ck.RunID || other.LineageSteps() <= ck.LineageSteps() {
		return nil, nil
	}
	what := fmt.Sprintf("-resume %s is an older copy of run %s (step %d, %d steps taken) than -checkpoint %s (step %d, %d steps taken)",
		o.resume, ck.RunID, ck.Step, ck.LineageSteps(), o.checkpoint, other.Step, other.LineageSteps())
	if !o.allowRewind {
		return nil, exit.Usagef("%s; resuming it would discard %d steps whose privacy is spent: resume %s instead, or add -allow-rewind (those steps then stay counted in ε)",
			what, other.LineageSteps()-ck.LineageSteps(), o.checkpoint)
	}
	fmt.Fprintf(stderr, "train: warning: %s; rewinding with -allow-rewind: the %d discarded steps stay counted in ε\n", what, other.LineageSteps()-ck.LineageSteps())
	return other, nil
}

func loadCheckpoint(path string) (*checkpoint.Training, error) {
	key, err := checkpointKey()
	if err != nil {
		return nil, err
	}
	if key != nil {
		return checkpoint.LoadWithKey(path, key)
	}
	return checkpoint.Load(path)
}
