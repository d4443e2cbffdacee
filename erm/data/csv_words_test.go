package data

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadCSVErrorWords pins the whole message of the errors that encoding/csv produces,
// across issue 28's move of the row loop to internal/csvrows: the words are this package's
// format strings around encoding/csv's errors, checked against the reader before the move.
func TestReadCSVErrorWords(t *testing.T) {
	disk := errors.New("disk on fire")
	for _, tc := range []struct {
		in     io.Reader
		want   string
		target error
	}{
		{strings.NewReader("1,2,3\n4,5\n"), "csv: line 2: 2 fields, want 3 like the first data line: malformed input", ErrFormat},
		{strings.NewReader("1,2\n3,\"4\n"), "csv: line 2: extraneous or missing \" in quoted-field: malformed input", ErrFormat},
		{strings.NewReader("1,2\n3,4\"x\n"), "csv: line 2: bare \" in non-quoted-field: malformed input", ErrFormat},
		{io.MultiReader(strings.NewReader("1,2\n\n3,4\n"), iotest.ErrReader(disk)), "csv: after line 3: disk on fire", disk},
		{io.MultiReader(strings.NewReader(""), iotest.ErrReader(disk)), "csv: after line 0: disk on fire", disk},
	} {
		_, err := ReadCSV(tc.in, CSVOptions{})
		if err == nil || err.Error() != tc.want || !errors.Is(err, tc.target) {
			t.Errorf("error %v, want %q wrapping %v", err, tc.want, tc.target)
		}
	}
}
