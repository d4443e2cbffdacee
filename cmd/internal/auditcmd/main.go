// Package auditcmd is the audit command, shared by cmd/audit and cmd/privtrain (audit subcommand).
package auditcmd

import "os"

// Main runs the audit command with args (without the program name) and returns its exit status.
func Main(args []string) int {
	return run(args, os.Stdout, os.Stderr)
}
