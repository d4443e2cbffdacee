//go:build !mpi || !cgo

package mpi

import (
	"errors"
	"os"
)

const available = false

// World is MPI_COMM_WORLD; in a binary built without MPI there is none.
type World struct{}

// Init returns ErrUnavailable: this binary was built without MPI.
func Init() (*World, error) {
	if mpiTagWithoutCgo {
		return nil, errors.New("this binary was built with -tags mpi but without cgo (CGO_ENABLED=0): build it with CGO_ENABLED=1 go build -tags mpi ./cmd/train")
	}
	return nil, ErrUnavailable
}

// Rank is 0.
func (w *World) Rank() int { return 0 }

// Size is 1.
func (w *World) Size() int { return 1 }

// AllreduceSum returns ErrUnavailable.
func (w *World) AllreduceSum(buf []float64) error { return ErrUnavailable }

// Broadcast returns ErrUnavailable.
func (w *World) Broadcast(buf []float64, root int) error { return ErrUnavailable }

// Barrier returns ErrUnavailable.
func (w *World) Barrier() error { return ErrUnavailable }

// Abort exits the process with code.
func (w *World) Abort(code int) { os.Exit(code) }

// Finalize does nothing.
func (w *World) Finalize() error { return nil }
