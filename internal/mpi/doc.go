// Package mpi binds the few MPI calls that data-parallel training needs (docs/distributed.md):
// initialisation, the rank and size of MPI_COMM_WORLD, a float64 sum over all ranks
// (MPI_Allreduce with MPI_DOUBLE and MPI_SUM), a broadcast, a barrier, abort and finalize.
//
// The bindings use cgo and are compiled only with the build tag mpi
// (go build -tags mpi ./cmd/train, against Debian's libopenmpi-dev through pkg-config's
// "mpi" package). Without the tag the package is a stub whose Init returns
// ErrUnavailable, so that the default build stays pure Go and static.
//
// MPI is initialised with MPI_THREAD_SERIALIZED: Go may run consecutive calls on
// different OS threads, but never two at once (World is not safe for concurrent use).
// MPI's default error handler, MPI_ERRORS_ARE_FATAL, stays: an MPI error, or a rank
// that dies, ends the whole job instead of leaving the others waiting.
package mpi

import "errors"

// ErrUnavailable is Init's error in a binary built without MPI.
var ErrUnavailable = errors.New("this binary was built without MPI: go build -tags mpi ./cmd/train")

// Available reports whether this binary was built with MPI (the build tag mpi, with cgo).
func Available() bool { return available }
