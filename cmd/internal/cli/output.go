package cli

import (
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/safeio"
)

// CheckOutput is the check of an output flag's path before any work: nothing there, or
// a regular file, is fine; a FIFO, a device, a socket, a directory or a symbolic link
// (not followed) is refused with a usage error (exit 2) that names the flag, the path
// and what is there, since writing the output would replace it or block on it. An
// empty path (the flag not given) is fine.
func CheckOutput(flag, path string) error {
	if path == "" {
		return nil
	}
	if err := safeio.CheckOutput(path); err != nil {
		return exit.Usagef("%s: %v", flag, err)
	}
	return nil
}
