//go:build !unix

package filelock

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("would block")

// On systems without flock the locks are not available: say so rather than pretend.
func flock(*os.File, bool) error { return errors.New("file locks are supported on Unix only") }

func funlock(*os.File) error { return nil }

func links(*os.File) uint64 { return 0 }
