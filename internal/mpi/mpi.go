//go:build mpi && cgo

package mpi

/*
#cgo pkg-config: mpi
#include <mpi.h>
#include <stdlib.h>

static int initSerialized(int *provided) {
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
}
static int threadSerialized(void) { return MPI_THREAD_SERIALIZED; }
static int commRank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int commSize(int *s) { return MPI_Comm_size(MPI_COMM_WORLD, s); }
static int allreduceSum(double *buf, int n) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
static int bcast(double *buf, int n, int root) {
	return MPI_Bcast(buf, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
}
static int barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
static int abortWorld(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }
static int finalize(void) { return MPI_Finalize(); }
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
)

const available = true

// chunk is the most values one MPI call moves: MPI counts are C ints.
const chunk = 1 << 28

// World is MPI_COMM_WORLD after Init. It is not safe for concurrent use.
type World struct {
	rank, size int
	finalized  bool
}

var initOnce struct {
	sync.Mutex
	world *World
}

// Init initialises MPI (once per process; later calls return the same World) and returns
// MPI_COMM_WORLD.
func Init() (*World, error) {
	initOnce.Lock()
	defer initOnce.Unlock()
	if initOnce.world != nil {
		return initOnce.world, nil
	}
	var provided C.int
	if rc := C.initSerialized(&provided); rc != C.MPI_SUCCESS {
		return nil, fmt.Errorf("mpi: MPI_Init_thread failed (code %d)", int(rc))
	}
	if provided < C.threadSerialized() {
		C.finalize()
		return nil, fmt.Errorf("mpi: this MPI library provides thread level %d, below MPI_THREAD_SERIALIZED (%d), which a Go program needs", int(provided), int(C.threadSerialized()))
	}
	var r, s C.int
	if rc := C.commRank(&r); rc != C.MPI_SUCCESS {
		return nil, fmt.Errorf("mpi: MPI_Comm_rank failed (code %d)", int(rc))
	}
	if rc := C.commSize(&s); rc != C.MPI_SUCCESS {
		return nil, fmt.Errorf("mpi: MPI_Comm_size failed (code %d)", int(rc))
	}
	initOnce.world = &World{rank: int(r), size: int(s)}
	return initOnce.world, nil
}

// Rank is this process's rank in MPI_COMM_WORLD, 0 ≤ Rank < Size.
func (w *World) Rank() int { return w.rank }

// Size is the number of processes in MPI_COMM_WORLD.
func (w *World) Size() int { return w.size }

// AllreduceSum replaces buf, on every rank, with the element-wise sum of all ranks' bufs
// (MPI_Allreduce, MPI_DOUBLE, MPI_SUM, in place). Every rank must call it with the same
// length. The order in which MPI adds the ranks' values is the library's: the result is
// the same on every rank, but may differ from a sequential sum in the last bits.
func (w *World) AllreduceSum(buf []float64) error {
	for lo := 0; lo < len(buf); lo += chunk {
		part := buf[lo:min(lo+chunk, len(buf))]
		if rc := C.allreduceSum((*C.double)(&part[0]), C.int(len(part))); rc != C.MPI_SUCCESS {
			return fmt.Errorf("mpi: MPI_Allreduce of %d values failed (code %d)", len(buf), int(rc))
		}
	}
	return nil
}

// Broadcast copies root's buf into every other rank's buf (MPI_Bcast, MPI_DOUBLE): the
// bytes, unchanged. Every rank must call it with the same length and root.
func (w *World) Broadcast(buf []float64, root int) error {
	if root < 0 || root >= w.size {
		return fmt.Errorf("mpi: broadcast from rank %d of %d", root, w.size)
	}
	for lo := 0; lo < len(buf); lo += chunk {
		part := buf[lo:min(lo+chunk, len(buf))]
		if rc := C.bcast((*C.double)(&part[0]), C.int(len(part)), C.int(root)); rc != C.MPI_SUCCESS {
			return fmt.Errorf("mpi: MPI_Bcast of %d values failed (code %d)", len(buf), int(rc))
		}
	}
	return nil
}

// Barrier returns once every rank has called it.
func (w *World) Barrier() error {
	if rc := C.barrier(); rc != C.MPI_SUCCESS {
		return fmt.Errorf("mpi: MPI_Barrier failed (code %d)", int(rc))
	}
	return nil
}

// Abort ends every process of the job (MPI_Abort on MPI_COMM_WORLD) with exit status code,
// as mpirun reports it. It does not return.
func (w *World) Abort(code int) {
	os.Stdout.Sync()
	os.Stderr.Sync()
	C.abortWorld(C.int(code))
	os.Exit(code) // not reached: MPI_Abort does not return
}

// Finalize shuts MPI down; every rank must call it before exiting normally. Later calls do
// nothing.
func (w *World) Finalize() error {
	if w.finalized {
		return nil
	}
	w.finalized = true
	if rc := C.finalize(); rc != C.MPI_SUCCESS {
		return fmt.Errorf("mpi: MPI_Finalize failed (code %d)", int(rc))
	}
	return nil
}
