// Package cli holds what the commands share: the one flag-parsing path (Command), and
// for those that train or read a checkpoint, checkpoint loading and saving under one MAC
// policy and data loading from flags. Exit statuses and usage errors are package exit's,
// shared by every command.
package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/cpupath"
)

// Run parses args with flags and runs body, printing a one-line message on stderr for an
// error; it returns the exit status. -help prints header and the flags on stdout. It is
// Command.Run for a command that runs the network kernels and checks its own arguments.
func Run(name, header string, flags *flag.FlagSet, args []string, stdout, stderr io.Writer, body func() error) int {
	c := Command{Name: name, Flags: flags, Header: header, ParseHint: " (see " + name + " -help)", Args: true, CPU: true}
	return c.Run(args, stdout, stderr, body)
}

// CPUPathError is the usage error for a PRIVTRAIN_CPU that names an unknown path or one this
// CPU cannot run (internal/cpupath), or nil: a command refuses to start rather than run on
// a path the user did not ask for.
func CPUPathError() error {
	if err := cpupath.EnvError(); err != nil {
		return exit.Usagef("%v", err)
	}
	return nil
}

// Shape formats a CHW shape as 1×28×28.
func Shape(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, "×")
}

// Thousands formats n with thousands separators: 26,010.
func Thousands(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
