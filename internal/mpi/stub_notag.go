//go:build !mpi

package mpi

const mpiTagWithoutCgo = false
