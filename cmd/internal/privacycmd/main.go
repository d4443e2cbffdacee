// Package privacycmd is the privacy command, shared by cmd/privacy and cmd/privtrain (privacy subcommand).
package privacycmd

import (
	"os"
)

// Main runs the privacy command with args (without the program name) and returns its exit status.
func Main(args []string) int {
	return run(args, os.Stdout, os.Stderr)
}
