package traincmd

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/mpi"
	"github.com/privtrain/privtrain/training"
)

// -distributed mpi (docs/distributed.md): every rank of an MPI job runs this command with
// the same flags; training.TrainerConfig.Reducer makes the trainers one data-parallel run.
// Rank 0 writes everything the run produces (checkpoints, metrics, plot, summary, the
// progress on stderr); the other ranks read the same data and -resume checkpoint and
// print only their errors, prefixed with their rank.
//
// Every rank must leave with the same status and none may be left waiting in a
// collective call:
//   - before the trainer's first collective (flags, data, model, checkpoint), a rank that
//     fails still joins one agreement (an allreduce of every rank's status); all ranks then
//     exit with the highest status, rank 0 printing its error, another rank its own only
//     where rank 0 had none (an error of that rank's files, not of the flags);
//   - while the trainers run, a rank that fails ends the job (MPI_Abort with its status);
//     a rank that dies makes mpirun end the job; a stop request (SIGINT, SIGTERM) travels
//     with the next step's allreduce, so that every rank stops after the same step;
//   - after the run, rank 0 writes its outputs and the ranks agree on the status again.

// registerDistributed adds -distributed to the train flags.
func registerDistributed(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.distributed, "distributed", "", "data-parallel training across the ranks of an MPI job: mpi (run as mpirun -np N train -distributed mpi …; needs a binary built with go build -tags mpi ./cmd/train; see docs/distributed.md). Rank 0 writes every output")
}

// phase of a distributed run, for its exit.
const (
	phaseSetup   = iota // before the trainer's first collective call
	phaseRunning        // the trainers' collective calls have started
	phaseAfter          // the trainers stopped at the same step
)

// distributedRun is this process's place in a -distributed mpi job. Its methods accept a
// nil receiver, which is one process.
type distributedRun struct {
	world      *mpi.World
	rank, size int
	phase      int
	// codes are every rank's status from the setup agreement, once ready has run it.
	codes []int
	// stop is set by the reducer when some rank asked to stop; Run's context.
	stop   context.Context
	cancel context.CancelFunc
	signal context.Context // this process's own stop request (SIGINT, SIGTERM)
	ext    []float64       // the reducer's allreduce buffer: the trainer's values and the stop flag
}

// startDistributed initialises MPI for -distributed mpi; nil without the flag. A binary
// built without MPI refuses the flag with a usage error.
func startDistributed(mode string) (*distributedRun, error) {
	switch mode {
	case "":
		return nil, nil
	case "mpi":
	default:
		return nil, exit.Usagef("-distributed %q: the one mode is mpi", mode)
	}
	w, err := mpi.Init()
	if err != nil {
		return nil, exit.Usagef("-distributed mpi: %v", err)
	}
	return &distributedRun{world: w, rank: w.Rank(), size: w.Size()}, nil
}

// leader reports whether this process writes the run's outputs: rank 0, or one process.
func (d *distributedRun) leader() bool { return d == nil || d.rank == 0 }

// output is where this process's progress and summary go: w on the leader, nowhere
// on the other ranks.
func (d *distributedRun) output(w io.Writer) io.Writer {
	if d.leader() {
		return w
	}
	return io.Discard
}

// errors is where this process's error message goes: stderr on the leader; a buffer on
// the other ranks, printed by exit when it is news.
func (d *distributedRun) errors(stderr io.Writer, buf *bytes.Buffer) io.Writer {
	if d.leader() {
		return stderr
	}
	return buf
}

// context returns the context Run gets: ctx itself in one process; in a job, one that is
// cancelled when any rank has been asked to stop, at the same step on every rank.
func (d *distributedRun) context(ctx context.Context) context.Context {
	if d == nil {
		return ctx
	}
	d.signal = ctx
	d.stop, d.cancel = context.WithCancel(context.Background())
	return d.stop
}

// dropOutputs clears, on ranks other than 0, the flags of files the run writes, so that
// only rank 0 writes them.
func (d *distributedRun) dropOutputs(o *options) {
	if !d.leader() {
		o.checkpoint, o.checkpointEvery, o.plot, o.metrics = "", 0, "", ""
	}
}

// reducer is TrainerConfig.Reducer: nil in one process.
func (d *distributedRun) reducer() training.Reducer {
	if d == nil {
		return nil
	}
	return stopReducer{d}
}

// ready is the setup agreement of a rank whose setup succeeded, right before Run: it
// returns an error if another rank's failed (that rank prints why).
func (d *distributedRun) ready() error {
	if d == nil {
		return nil
	}
	codes, err := d.agree(exit.OK)
	if err != nil {
		return err
	}
	d.codes = codes
	if worst := slices.Max(codes); worst != exit.OK {
		return &otherRankError{code: worst, rank: slices.IndexFunc(codes, func(c int) bool { return c != exit.OK })}
	}
	d.phase = phaseRunning
	return nil
}

// ran records that Run returned on every rank at the same step: normally, or at a stop
// request that travelled with the allreduce.
func (d *distributedRun) ran() {
	if d != nil {
		d.phase = phaseAfter
	}
}

// otherRankError is ready's error when another rank failed before training.
type otherRankError struct{ code, rank int }

func (e *otherRankError) Error() string {
	return fmt.Sprintf("rank %d of the distributed job failed before training (its error is above)", e.rank)
}

// agree adds every rank's status and returns them all, indexed by rank.
func (d *distributedRun) agree(code int) ([]int, error) {
	buf := make([]float64, d.size)
	buf[d.rank] = float64(code)
	if err := d.world.AllreduceSum(buf); err != nil {
		return nil, err
	}
	codes := make([]int, d.size)
	for i, v := range buf {
		codes[i] = int(v)
	}
	return codes, nil
}

// exit ends this process's part of the job with status code and returns the status the
// process exits with, the same on every rank; msg holds this rank's error message (ranks
// other than 0).
func (d *distributedRun) exit(code int, msg *bytes.Buffer, stderr io.Writer) int {
	if d == nil {
		return code
	}
	say := func() {
		if msg.Len() > 0 {
			fmt.Fprintf(stderr, "rank %d of %d: %s", d.rank, d.size, msg.Bytes())
		}
	}
	if d.phase == phaseRunning {
		// Run failed on this rank; the others may be waiting in a collective call.
		if code == exit.OK {
			code = exit.Failure
		}
		say()
		d.world.Abort(code)
	}
	codes := d.codes // another rank failed before training: ready agreed already
	if d.phase != phaseSetup || codes == nil {
		var err error
		if codes, err = d.agree(code); err != nil {
			say()
			d.world.Abort(max(code, exit.Failure))
		}
	}
	if d.rank != 0 && (codes[0] == exit.OK || d.phase == phaseAfter) {
		say() // news: rank 0 did not fail, or failed for its own reasons after the run
	}
	if err := d.world.Finalize(); err != nil {
		fmt.Fprintf(stderr, "train: rank %d: %v\n", d.rank, err)
	}
	return slices.Max(codes)
}

// stopReducer is the job's reducer: MPI_COMM_WORLD, with one more value in every allreduce,
// the number of ranks asked to stop; when it is not 0 every rank cancels Run's context in
// the same step, so that all stop after it.
type stopReducer struct{ d *distributedRun }

func (r stopReducer) Rank() int { return r.d.rank }
func (r stopReducer) Size() int { return r.d.size }
func (r stopReducer) Broadcast(buf []float64, root int) error {
	return r.d.world.Broadcast(buf, root)
}

func (r stopReducer) AllreduceSum(buf []float64) error {
	if cap(r.d.ext) < len(buf)+1 {
		r.d.ext = make([]float64, len(buf)+1)
	}
	ext := r.d.ext[:len(buf)+1]
	copy(ext, buf)
	ext[len(buf)] = 0
	if r.d.signal != nil && r.d.signal.Err() != nil {
		ext[len(buf)] = 1
	}
	if err := r.d.world.AllreduceSum(ext); err != nil {
		return err
	}
	copy(buf, ext)
	if ext[len(buf)] != 0 && r.d.cancel != nil {
		r.d.cancel()
	}
	return nil
}

// describe prints, in a job, how the training set is split among the ranks.
func (d *distributedRun) describe(w io.Writer, n int) {
	if d == nil {
		return
	}
	fmt.Fprintf(w, "distributed: %d ranks (MPI); each trains on the sampled examples of its shard of about %s examples, rank 0 draws the noise and writes every output\n", d.size, cli.Thousands(n/d.size))
}
