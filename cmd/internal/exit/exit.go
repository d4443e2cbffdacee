// Package exit is what every command (train, evaluate, predict, export, privacy, erm,
// audit) says the same way when it stops: the exit statuses, the usage error (a mistake
// on the command line or in its input, exit status 2) and the one place that turns an
// error into a status. It imports no product package, so that each command can use it.
package exit

import (
	"errors"
	"fmt"
	"strings"
)

// Exit statuses shared by the commands.
const (
	OK          = 0
	Failure     = 1   // the computation, a read or a write failed
	Usage       = 2   // bad command line, or input that does not fit
	Interrupted = 130 // stopped by Ctrl-C (128 + SIGINT, as shells report it)
)

// UsageError is a mistake on the command line or an input that does not fit: exit
// status 2. Its message names the flag.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// IsUsage reports whether err is or wraps a UsageError.
func IsUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}

// Status is the exit status of a command that stopped with err: OK for nil, Usage for a
// UsageError, Failure otherwise.
func Status(err error) int {
	switch {
	case err == nil:
		return OK
	case IsUsage(err):
		return Usage
	}
	return Failure
}

// OneLine keeps a message on one line.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
