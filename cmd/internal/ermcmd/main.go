// Package ermcmd is the erm command, shared by cmd/erm and cmd/privtrain (erm subcommand).
package ermcmd

import "os"

// Main runs the erm command with args (without the program name) and returns its exit status.
func Main(args []string) int {
	return run(args, os.Stdout, os.Stderr)
}
