// Package traincmd is the train command, shared by cmd/train and cmd/privtrain (train subcommand).
package traincmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Main runs the train command with args (without the program name) and returns its exit
// status. The first SIGINT or SIGTERM finishes the current step and stops; a second kills
// the process at once.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	finished := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-finished:
			return
		}
		select {
		case <-finished: // the stop() below, not a signal: nothing to announce
			return
		default:
		}
		stop() // a second Ctrl-C kills the process at once
		fmt.Fprintln(os.Stderr, "\ntrain: stopping after the current step (Ctrl-C again to quit at once)")
	}()
	code := run(ctx, args, os.Stdout, os.Stderr)
	close(finished)
	stop()
	return code
}
