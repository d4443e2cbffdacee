package traincmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/mpi"
	"github.com/privtrain/privtrain/nn"
)

// TestDistributedWithoutMPI: a binary built without the mpi tag refuses -distributed mpi
// with a usage error that says how to build one that can; an unknown mode is a usage error
// too.
func TestDistributedWithoutMPI(t *testing.T) {
	if mpi.Available() {
		t.Skip("built with -tags mpi")
	}
	for _, c := range []struct{ mode, want string }{
		{"mpi", "this binary was built without MPI: go build -tags mpi ./cmd/train"},
		{"nccl", `-distributed "nccl": the one mode is mpi`},
	} {
		code, _, stderr := runCmd(t, context.Background(), "-distributed", c.mode, "-model", "logreg", "-epochs", "1")
		if code != exit.Usage || !strings.Contains(stderr, c.want) {
			t.Errorf("-distributed %s: exit %d, stderr %q; want exit 2 and %q", c.mode, code, stderr, c.want)
		}
	}
}

// mpiJob is the train binary built with -tags mpi, and mpirun.
type mpiJob struct {
	bin, mpirun string
}

var mpiBuild struct {
	once sync.Once
	job  *mpiJob
	skip string
}

// needMPI builds cmd/train with -tags mpi once per test binary, or skips the test with
// the reason: -short, no mpirun, no mpicc, no MPI development files.
func needMPI(t *testing.T) *mpiJob {
	t.Helper()
	if testing.Short() {
		t.Skip("builds cmd/train with -tags mpi and runs mpirun")
	}
	mpiBuild.once.Do(func() {
		mpirun, err := exec.LookPath("mpirun")
		if err != nil {
			mpiBuild.skip = "no mpirun on PATH (apt-get install openmpi-bin libopenmpi-dev)"
			return
		}
		if _, err := exec.LookPath("mpicc"); err != nil {
			mpiBuild.skip = "no mpicc on PATH (apt-get install libopenmpi-dev)"
			return
		}
		gobin, err := exec.LookPath("go")
		if err != nil {
			mpiBuild.skip = "no go command on PATH"
			return
		}
		dir, err := os.MkdirTemp("", "privtrain-mpi-")
		if err != nil {
			mpiBuild.skip = err.Error()
			return
		}
		bin := filepath.Join(dir, "train")
		build := exec.Command(gobin, "build", "-tags", "mpi", "-o", bin, "github.com/privtrain/privtrain/cmd/train")
		build.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := build.CombinedOutput(); err != nil {
			mpiBuild.skip = fmt.Sprintf("go build -tags mpi ./cmd/train failed (MPI development files missing?): %v\n%s", err, out)
			return
		}
		mpiBuild.job = &mpiJob{bin: bin, mpirun: mpirun}
	})
	if mpiBuild.job == nil {
		t.Skip(mpiBuild.skip)
	}
	return mpiBuild.job
}

// cleanupMPIBuild removes the MPI build of the tests, if any (called by TestMain, in
// budget_test.go).
func cleanupMPIBuild() {
	if mpiBuild.job != nil {
		os.RemoveAll(filepath.Dir(mpiBuild.job.bin))
	}
}

// jobTimeout bounds every mpirun of these tests: a hang fails the test instead of
// blocking the suite. It is not a timed assertion: each job takes seconds.
const jobTimeout = 2 * time.Minute

// run runs mpirun -np n with args (n = 0: the binary alone, one process) and returns the
// exit status and the output.
func (j *mpiJob) run(t *testing.T, n int, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
	defer cancel()
	var cmd *exec.Cmd
	if n == 0 {
		cmd = exec.CommandContext(ctx, j.bin, args...)
	} else {
		cmd = exec.CommandContext(ctx, j.mpirun, append([]string{"--oversubscribe", "-np", strconv.Itoa(n), j.bin}, args...)...)
	}
	cmd.Env = mpiEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mpirun -np %d %s: no exit within %v (a hang)\n%s", n, strings.Join(args, " "), jobTimeout, stderr.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// mpiEnv lets mpirun run as root (CI containers) and keeps OpenMPI to the loopback and
// shared-memory transports of one machine.
func mpiEnv() []string {
	return append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
		"OMPI_MCA_btl=self,vader", "OMPI_MCA_rmaps_base_oversubscribe=1")
}

func (j *mpiJob) mustRun(t *testing.T, n int, args ...string) string {
	t.Helper()
	code, stdout, stderr := j.run(t, n, args...)
	if code != exit.OK {
		t.Fatalf("mpirun -np %d train %s: exit %d\n%s", n, strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// params returns the trained parameters in the checkpoint at path.
func params(t *testing.T, path string) []float64 {
	t.Helper()
	m, err := nn.LoadModel(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, m.NumParams())
	m.Params(p)
	return p
}

func maxAbsDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// mpiTolerance bounds |θ_N − θ_1| for the runs below (float64 logistic regression,
// expected batch 256, flat C = 1, lr 3, 32 or 64 steps): both add the same clipped
// per-example gradients (each of norm ≤ 1) and the same noise bits, in a different order,
// so a step's sum differs by at most about 256·2⁻⁵² ≈ 6e-14 in each coordinate, scaled
// into the parameters by lr/(qn) = 3/256; 64 steps of a logistic regression at this step
// size keep the difference far below 1e-9. One example more or less in one step moves the
// parameters by lr·C/(qn) ≈ 1e-2 (spread over 7,850 coordinates, still above 1e-4 in
// the largest): the tolerance tells rounding from a wrong sample.
const mpiTolerance = 1e-9

// summaryNumbers are the fields of the -json summary that N ranks must reproduce exactly.
var summaryNumbers = []string{"epsilon", "noise_multiplier", "sample_rate", "steps", "epochs", "batch", "parameters", "rdp_order"}

// TestMPIMatchesOneProcess: mpirun -np N train -distributed mpi with -seed gives the one
// process's plan and ε exactly, and its final parameters bit for bit with N = 1 and up to
// summation-order rounding (mpiTolerance) with N = 2 and 3.
func TestMPIMatchesOneProcess(t *testing.T) {
	j := needMPI(t)
	dir := t.TempDir()
	args := func(ck string) []string {
		return []string{"-model", "logreg", "-float64", "-seed", "1", "-epochs", "1", "-batch", "256", "-json", "-checkpoint", ck}
	}
	one := filepath.Join(dir, "one.ckpt")
	want := decodeSummary(t, j.mustRun(t, 0, args(one)...))
	wantParams := params(t, one)
	for _, n := range []int{1, 2, 3} {
		ck := filepath.Join(dir, fmt.Sprintf("n%d.ckpt", n))
		out := j.mustRun(t, n, append(args(ck), "-distributed", "mpi")...)
		// One summary: "epsilon" also stands in its dataset_budget object, so count a key
		// that only the summary's top level has.
		if c := strings.Count(out, `"test_accuracy"`); c != 1 {
			t.Errorf("N = %d: %d summaries on stdout, want rank 0's alone:\n%s", n, c, out)
		}
		got := decodeSummary(t, out)
		for _, k := range summaryNumbers {
			if got[k] != want[k] {
				t.Errorf("N = %d: %s = %v, one process %v", n, k, got[k], want[k])
			}
		}
		d := maxAbsDiff(params(t, ck), wantParams)
		t.Logf("N = %d: max |θ_N − θ_1| = %g", n, d)
		if n == 1 && d != 0 {
			t.Errorf("N = 1: parameters differ from one process's by %g, want bit for bit", d)
		}
		if d > mpiTolerance {
			t.Errorf("N = %d: parameters differ from one process's by %g > %g", n, d, mpiTolerance)
		}
	}
}

// TestMPIResumeUnderAnotherN: a checkpoint written by 2 ranks after epoch 1 resumes under
// 3 ranks for epoch 2, and the result is one process's two epochs (fixed noise, so that
// the plan may grow on resume).
func TestMPIResumeUnderAnotherN(t *testing.T) {
	j := needMPI(t)
	dir := t.TempDir()
	common := []string{"-model", "logreg", "-float64", "-seed", "2", "-batch", "256", "-noise", "1.1", "-json"}
	one := filepath.Join(dir, "one.ckpt")
	want := decodeSummary(t, j.mustRun(t, 0, append(common, "-epochs", "2", "-checkpoint", one)...))
	ck := filepath.Join(dir, "job.ckpt")
	j.mustRun(t, 2, append(common, "-epochs", "1", "-checkpoint", ck, "-checkpoint-every", "10", "-distributed", "mpi")...)
	got := decodeSummary(t, j.mustRun(t, 3, append(common, "-epochs", "2", "-resume", ck, "-checkpoint", ck, "-distributed", "mpi")...))
	for _, k := range []string{"epsilon", "steps", "epochs"} {
		if got[k] != want[k] {
			t.Errorf("resumed under N = 3: %s = %v, one process %v", k, got[k], want[k])
		}
	}
	if d := maxAbsDiff(params(t, ck), params(t, one)); d > mpiTolerance {
		t.Errorf("resumed under N = 3: parameters differ from one process's by %g > %g", d, mpiTolerance)
	}
}

// TestMPIErrorsEndTheJob: a usage error on every rank exits 2, said once; ranks given
// different seeds (so their samples would not add up to one Poisson sample) stop the job
// with a message; a rank killed during training ends the job with a nonzero status
// instead of leaving the others waiting.
func TestMPIErrorsEndTheJob(t *testing.T) {
	j := needMPI(t)
	t.Run("usage", func(t *testing.T) {
		code, stdout, stderr := j.run(t, 2, "-distributed", "mpi", "-model", "logreg", "-batch", "100000")
		if code != exit.Usage || strings.Count(stderr, "-batch 100000 is larger than the training set") != 1 || stdout != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and rank 0's message once", code, stdout, stderr)
		}
	})
	t.Run("one rank's error", func(t *testing.T) {
		// MPMD: rank 1 alone gets a bad flag; rank 0 must not wait for it, and the job
		// exits with rank 1's status and message.
		ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
		defer cancel()
		flags := []string{"-distributed", "mpi", "-model", "logreg", "-epochs", "1"}
		cmd := exec.CommandContext(ctx, j.mpirun, append(append(append(append([]string{"--oversubscribe", "-np", "1", j.bin}, flags...), ":", "-np", "1", j.bin), flags...), "-batch", "100000")...)
		cmd.Env = mpiEnv()
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("no exit within %v (a hang)\n%s", jobTimeout, out)
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exit.Usage || !strings.Contains(string(out), "rank 1 of 2: train: -batch 100000 is larger than the training set") {
			t.Errorf("%v, output %s; want exit 2 with rank 1's message", err, out)
		}
	})
	t.Run("seeds differ", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
		defer cancel()
		flags := []string{"-distributed", "mpi", "-model", "logreg", "-epochs", "1", "-batch", "256"}
		cmd := exec.CommandContext(ctx, j.mpirun, append(append(append(append([]string{"--oversubscribe", "-np", "1", j.bin}, flags...), "-seed", "1", ":", "-np", "1", j.bin), flags...), "-seed", "2")...)
		cmd.Env = mpiEnv()
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("no exit within %v (a hang)\n%s", jobTimeout, out)
		}
		t.Logf("%v\n%s", err, out)
		if err == nil || !strings.Contains(string(out), "the ranks of the distributed job disagree") {
			t.Errorf("%v, output %s; want a nonzero exit saying that the ranks disagree", err, out)
		}
	})
	t.Run("SIGTERM to one rank", func(t *testing.T) {
		// The stop request travels with the allreduce: both ranks stop after the same
		// step, rank 0 writes the checkpoint, and the job exits 130.
		ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
		defer cancel()
		ck := filepath.Join(t.TempDir(), "stopped.ckpt")
		cmd := exec.CommandContext(ctx, j.mpirun, "--oversubscribe", "-np", "2", j.bin, "-distributed", "mpi", "-model", "logreg", "-epochs", "200", "-batch", "64", "-noise", "1", "-checkpoint", ck)
		cmd.Env = mpiEnv()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(waitForRank(t, cmd.Process.Pid, 1), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ctx.Err() != nil {
			t.Fatalf("no exit within %v after SIGTERM to rank 1 (a hang)\n%s", jobTimeout, out.String())
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exit.Interrupted || !strings.Contains(out.String(), "checkpoint written to "+ck) {
			t.Fatalf("%v, want exit 130 and rank 0's checkpoint\n%s", err, out.String())
		}
		params(t, ck) // it loads
	})
	t.Run("killed rank", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, j.mpirun, "--oversubscribe", "-np", "3", j.bin, "-distributed", "mpi", "-model", "logreg", "-epochs", "200", "-batch", "64", "-noise", "1")
		cmd.Env = mpiEnv()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		victim := waitForRank(t, cmd.Process.Pid, 1)
		if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ctx.Err() != nil {
			t.Fatalf("no exit within %v after rank 1 was killed (a hang)\n%s", jobTimeout, out.String())
		}
		if err == nil {
			t.Fatalf("mpirun exited 0 after rank 1 was killed\n%s", out.String())
		}
		t.Logf("mpirun after rank 1 (pid %d) was killed: %v\n%s", victim, err, out.String())
		if !strings.Contains(out.String(), strconv.Itoa(victim)) && !strings.Contains(out.String(), "signal 9") {
			t.Errorf("the output does not name the killed rank (pid %d):\n%s", victim, out.String())
		}
	})
}

// waitForRank returns the pid of the given rank among the processes mpirun (pid parent)
// started, once that rank has trained for a moment: the children whose environment says
// OMPI_COMM_WORLD_RANK=rank.
func waitForRank(t *testing.T, parent, rank int) int {
	t.Helper()
	want := fmt.Sprintf("OMPI_COMM_WORLD_RANK=%d\x00", rank)
	for range 600 {
		time.Sleep(100 * time.Millisecond)
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			// stat: pid (comm) state ppid …; comm may hold spaces, so split after ')'.
			rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
			f := strings.Fields(rest)
			if len(f) < 2 || f[1] != strconv.Itoa(parent) {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err == nil && bytes.Contains(env, []byte(want)) {
				time.Sleep(2 * time.Second) // let it get into training
				return pid
			}
		}
	}
	t.Fatalf("no rank %d among mpirun's children after 60 s", rank)
	return 0
}
