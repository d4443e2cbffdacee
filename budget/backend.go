package budget

import (
	"errors"
	"fmt"
	"time"
)

// backend is where a store keeps its ledgers: a directory (fileBackend) or a PostgreSQL
// database (pgBackend). It only stores: every rule of the ledger (the hash chain, keys
// and sealing, the head check, composition, reserve and commit, lineage imports,
// witnesses) is Store's and the same for both.
type backend interface {
	// begin locks data set fp against every other process's appends ("": a consistent
	// view of every data set, for listing) until end.
	begin(fp string) (storage, error)
	close() error
}

// storage is a backend under its lock.
type storage interface {
	fingerprints() ([]string, error)
	// load returns data set fp's ledger as a ledger file holds it (each entry's line
	// ending in a newline; a last line without one is torn), fs.ErrNotExist when it has
	// none, and its head record as a head file holds it (nil: none).
	load(fp string) (ledger, head []byte, err error)
	// put appends line (entry seq of l, whose hash is hash) and moves the head to it,
	// keyed with key (nil: unkeyed): after an error l's ledger is as it was (or, where
	// that cannot be undone, holds the entry and counts it).
	put(l *ledger, line []byte, seq int, hash string, key []byte) error
	// commit makes the appends durable for everyone; end releases the lock (and drops
	// appends not committed). end may be called more than once.
	commit() error
	end()
	// ledgerName and headName are what messages call data set fp's ledger and a head.
	ledgerName(fp string) string
	headName() string
}

// retryDelays are the waits between the attempts of a reservation or a commit whose
// database connection failed (a file store's errors are not retried).
var retryDelays = []time.Duration{250 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// retry runs fn, and again after each of retryDelays while it fails with a connection
// error (again: true), reconnecting each time.
func retry(fn func(again bool) error) error {
	err := fn(false)
	for _, d := range retryDelays {
		if !retryable(err) {
			return err
		}
		time.Sleep(d)
		err = fn(true)
	}
	return err
}

// dbError is an error of a database store's connection or server.
type dbError struct {
	where, op string
	err       error
	// retry: the connection failed or the server went away (restart, shutdown,
	// serialisation failure): the same operation may succeed on a new connection.
	retry bool
}

func (e *dbError) Error() string {
	return fmt.Sprintf("budget store %s: %s: %v", e.where, e.op, e.err)
}

func (e *dbError) Unwrap() []error {
	if e.retry {
		return []error{e.err, ErrUnreachable}
	}
	return []error{e.err}
}

// ErrUnreachable reports a database store that could not be reached, or that went away
// (its connection lost, the server restarting) and stayed away through the retries.
var ErrUnreachable = errors.New("budget: the database store cannot be reached")

// retryable reports a database error that a new connection may not meet.
func retryable(err error) bool {
	var de *dbError
	return errors.As(err, &de) && de.retry
}
