package traincmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/filelock"
	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// The protections of the -checkpoint file (issue 22): one writer at a time, no silent
// overwrite of another run's checkpoint, no silent loss of a MAC.

// protectFlags are the flags of those protections.
type protectFlags struct {
	allowUnsigned bool // -allow-unsigned
	overwrite     bool // -overwrite
}

func addProtectFlags(fs *flag.FlagSet, p *protectFlags) {
	fs.BoolVar(&p.allowUnsigned, "allow-unsigned", false, "with -resume: "+cli.AllowUnsignedUsage+
		". A signed checkpoint is never replaced by an unsigned one: without the key, write to another -checkpoint")
	fs.BoolVar(&p.overwrite, "overwrite", false, "let -checkpoint FILE replace a file that holds a checkpoint of another run (or no readable checkpoint); without it such a run is refused (exit 2) before any work, since the other run's model and ledger would be lost. "+
		"While a run writes FILE it holds an exclusive lock on FILE.lock: a second run with the same -checkpoint is refused (exit 2) with the first one's pid")
}

// signing is how train treats the MAC of the checkpoints it reads.
func (p *protectFlags) signing(stderr io.Writer) *cli.Signing {
	return &cli.Signing{Command: "train", AllowUnsigned: p.allowUnsigned, Stderr: stderr}
}

// lockPath is the lock file of checkpoint path: a file beside it, since the checkpoint
// itself is replaced by a rename at every write (a lock on it would stay on the old
// file). A path reached through another name of its directory locks the same file.
func lockPath(path string) string { return path + ".lock" }

// lockCheckpoint takes the exclusive lock of -checkpoint for the run's life, before any
// work: every run that writes that file (a fresh run, -resume X -checkpoint X, -resume
// Y -checkpoint X) takes it, so a second writer is refused with the holder's pid. The
// kernel releases it when the process ends, kill -9 included. It returns nil without
// -checkpoint.
func lockCheckpoint(o *options) (*filelock.Lock, error) {
	if o.checkpoint == "" {
		return nil, nil
	}
	if err := cli.CheckOutput("-checkpoint", o.checkpoint); err != nil {
		return nil, err
	}
	l, err := filelock.TryLock(lockPath(o.checkpoint))
	if err == nil {
		return l, nil
	}
	var held *filelock.HeldError
	switch {
	case errors.As(err, &held) && held.PID > 0:
		return nil, exit.Usagef("-checkpoint %s is being written by another train run (process %d holds %s): wait for it to finish, or choose another -checkpoint",
			o.checkpoint, held.PID, held.Path)
	case errors.As(err, &held):
		return nil, exit.Usagef("-checkpoint %s is being written by another train run (it holds %s): wait for it to finish, or choose another -checkpoint",
			o.checkpoint, held.Path)
	case errors.Is(err, safeio.ErrNotRegular):
		return nil, exit.Usagef("-checkpoint %s: cannot lock it: %v", o.checkpoint, err)
	}
	return nil, exit.Usagef("-checkpoint %s: cannot lock %s (in %s): %s", o.checkpoint, lockPath(o.checkpoint), filepath.Dir(o.checkpoint), cli.StatReason(err))
}

// checkTarget decides, before any work, whether this run may write the file at
// -checkpoint, given the resumed checkpoint ck (nil for a fresh run):
//   - a signed checkpoint is never replaced while PRIVTRAIN_CHECKPOINT_KEY is not set
//     (the run would write it without its MAC);
//   - a checkpoint of another run (for a fresh run: any checkpoint), or a file that is
//     not a readable checkpoint, is replaced only with -overwrite, which says so;
//   - an empty file, the resumed file itself and a copy of the same run are written
//     (newerCheckpoint checks that the resumed copy is not older).
func checkTarget(o *options, ck *checkpoint.Training, stderr io.Writer) error {
	if o.checkpoint == "" {
		return nil
	}
	if err := cli.CheckOutput("-checkpoint", o.checkpoint); err != nil {
		return err // a FIFO or a device has size 0, but is not "nothing to lose"
	}
	fi, err := os.Lstat(o.checkpoint)
	if err != nil || fi.Size() == 0 {
		return nil // nothing there to lose (checkWritable reports a path that cannot be written)
	}
	key, err := cli.CheckpointKey()
	if err != nil {
		return err
	}
	other, signed, err := checkpoint.LoadUnverified(o.checkpoint)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if signed && key == nil {
		return exit.Usagef("-checkpoint %s is signed (it carries a MAC), but %s is not set: this run would replace it with a checkpoint without a MAC; set %s to its key, or write to another -checkpoint",
			o.checkpoint, cli.KeyEnv, cli.KeyEnv)
	}
	var what string
	switch {
	case err != nil:
		what = fmt.Sprintf("is not a readable checkpoint (%s)", exit.OneLine(err.Error()))
	case ck != nil && other.RunID != "" && other.RunID == ck.RunID:
		return nil // the same run: newerCheckpoint compares the two
	case ck != nil:
		what = "holds another run: " + describeRun(other)
	default:
		what = "holds " + describeRun(other)
	}
	if o.protect.overwrite {
		fmt.Fprintf(stderr, "train: warning: -checkpoint %s %s; replacing it (-overwrite)\n", o.checkpoint, what)
		return nil
	}
	hint := "choose another -checkpoint"
	if err == nil && ck == nil {
		hint = fmt.Sprintf("continue it with -resume %s -checkpoint %s, %s", o.checkpoint, o.checkpoint, hint)
	}
	return exit.Usagef("-checkpoint %s %s; this run would overwrite it: %s, or add -overwrite to replace it", o.checkpoint, what, hint)
}

// describeRun says which run a checkpoint holds and what it spent: "run 3f2a…, 96
// steps taken (step 96 of 128), ε = 1.23 at δ = 1e-05".
func describeRun(c *checkpoint.Training) string {
	s := "run " + c.RunID
	if c.RunID == "" {
		s = "a run"
	}
	s += fmt.Sprintf(", %d steps taken (step %d of %d)", c.LineageSteps(), c.Step, c.Plan.Steps)
	if c.Ledger != nil && c.Plan.Private {
		if spent, err := c.Ledger.Epsilon(c.Plan.Delta); err == nil {
			s += fmt.Sprintf(", ε = %.4g at δ = %g", spent.Epsilon, c.Plan.Delta)
		}
	}
	return s
}

// warnUncheckedContent says when the resumed checkpoint is older than the content
// fingerprint: its data was checked by size, shape, classes and labels only.
func warnUncheckedContent(o *options, ck *checkpoint.Training, stderr io.Writer) {
	if ck != nil && ck.Dataset.Content == "" {
		fmt.Fprintf(stderr, "train: warning: -resume %s records no content fingerprint of its training data (written before content_sha256): the data's size, shape and labels match, its examples cannot be checked; the checkpoints this run writes record it\n", o.resume)
	}
}
