package datasets

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadCSVErrorWords pins the whole message of the errors that encoding/csv and the row
// width produce, across issue 28's move of the row loop to internal/csvrows: the words are
// the format strings of this package around encoding/csv's ParseError, checked against the
// reader before the move.
func TestReadCSVErrorWords(t *testing.T) {
	r := []Range{{0, 1}}
	disk := errors.New("disk on fire")
	for _, tc := range []struct {
		in   io.Reader
		want string
	}{
		{strings.NewReader("1,0\n2,1,3\n"), "datasets: bad CSV data: line 2: 3 fields, want 2 as in the first row"},
		{strings.NewReader("1,0\n\n2\n"), "datasets: bad CSV data: line 3: 1 fields, want 2 as in the first row"},
		{strings.NewReader("1,0\n1,\"0\n"), "datasets: bad CSV data: parse error on line 2, column 6: extraneous or missing \" in quoted-field"},
		{strings.NewReader("1,0\n1,0\"x\n"), "datasets: bad CSV data: parse error on line 2, column 4: bare \" in non-quoted-field"},
		{strings.NewReader("1\",0\n"), "datasets: bad CSV data: parse error on line 1, column 2: bare \" in non-quoted-field"},
		{io.MultiReader(strings.NewReader("1,0\n"), iotest.ErrReader(disk)), "datasets: bad CSV data: disk on fire"},
		{io.MultiReader(strings.NewReader(""), iotest.ErrReader(disk)), "datasets: bad CSV data: disk on fire"},
	} {
		_, err := ReadCSV(tc.in, CSVOptions{Ranges: r})
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrCSV) {
			t.Errorf("error %v, want %q wrapping ErrCSV", err, tc.want)
		}
	}
}
