package mpi_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privtrain/privtrain/internal/mpi"
)

// TestStub: without the mpi tag, Init says how to build a binary with MPI.
func TestStub(t *testing.T) {
	if mpi.Available() {
		t.Skip("built with MPI")
	}
	if _, err := mpi.Init(); !errors.Is(err, mpi.ErrUnavailable) || !strings.Contains(err.Error(), "go build -tags mpi ./cmd/train") {
		t.Errorf("Init: %v, want ErrUnavailable naming the build command", err)
	}
}

// TestCollectives builds testdata/collectives with -tags mpi and runs it under mpirun on
// 3 ranks: sums against their closed forms, a broadcast's bytes, and Abort's status.
func TestCollectives(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with -tags mpi and runs mpirun")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("no mpirun on PATH (apt-get install openmpi-bin libopenmpi-dev)")
	}
	if _, err := exec.LookPath("mpicc"); err != nil {
		t.Skip("no mpicc on PATH (apt-get install libopenmpi-dev)")
	}
	bin := filepath.Join(t.TempDir(), "collectives")
	build := exec.Command("go", "build", "-tags", "mpi", "-o", bin, "./testdata/collectives")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("go build -tags mpi failed (MPI development files missing?): %v\n%s", err, out)
	}
	env := append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_btl=self,vader")
	job := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard, not a timing
		defer cancel()
		cmd := exec.CommandContext(ctx, mpirun, append([]string{"--oversubscribe", "-np", "3", bin}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("mpirun %v: no exit within a minute\n%s", args, out)
		}
		return string(out), err
	}
	out, err := job()
	if err != nil || strings.Contains(out, "FAIL") || strings.Count(out, "ok ") != 3 {
		t.Errorf("collectives: %v\n%s", err, out)
	}
	out, err = job("-abort", "7")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("rank 1 aborting with 7: %v, want exit status 7\n%s", err, out)
	}
}
