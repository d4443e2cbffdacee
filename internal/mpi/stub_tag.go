//go:build mpi && !cgo

package mpi

const mpiTagWithoutCgo = true
