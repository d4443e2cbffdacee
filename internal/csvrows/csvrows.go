// Package csvrows reads the rows of a CSV file for the data readers (datasets.ReadCSV and
// erm/data.ReadCSV): each row with the line it starts on, and one error, *Error, for what
// encoding/csv refuses, with the line to name. Each reader checks the rows' width and cells
// itself and words every error in its own terms.
package csvrows

import (
	"encoding/csv"
	"errors"
	"io"

	"github.com/privtrain/privtrain/internal/safeio"
)

// Options say how to split a file into rows.
type Options struct {
	// Comma is the field separator (0: ',').
	Comma rune
	// TrimLeadingSpace ignores white space at the start of a field.
	TrimLeadingSpace bool
}

// Error is a CSV file that encoding/csv cannot read: malformed quoting, or an error of the
// underlying reader.
type Error struct {
	// Line is, for malformed CSV, the line of the fault; for a reader's error, the line of
	// the last row read (0: none).
	Line int
	// Fault is, for malformed CSV, what is wrong without its place (csv.ErrQuote, …); nil
	// for a reader's error.
	Fault error
	// Err is the error as encoding/csv returned it: a *csv.ParseError, or the reader's.
	Err error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Each calls row for every row of r in order, with the line the row starts on (from 1) and
// its fields, which are valid only during the call. Empty lines are skipped. Rows may
// differ in width: the caller checks, to word the error. Each stops at the first error:
// row's, returned as it is, or the file's, returned as an *Error.
//
// A line longer than safeio.MaxLine stops the reading with an *Error whose Err is a
// *safeio.LineError, so that one endless line cannot make encoding/csv buffer gigabytes.
func Each(r io.Reader, opts Options, row func(line int, fields []string) error) error {
	cr := csv.NewReader(safeio.LineLimit(r, safeio.MaxLine))
	if opts.Comma != 0 {
		cr.Comma = opts.Comma
	}
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = opts.TrimLeadingSpace
	cr.ReuseRecord = true
	last := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			e := &Error{Line: last, Err: err}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				e.Line, e.Fault = pe.Line, pe.Err
			}
			return e
		}
		last, _ = cr.FieldPos(0)
		if err := row(last, rec); err != nil {
			return err
		}
	}
}
