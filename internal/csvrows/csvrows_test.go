package csvrows

import (
	"encoding/csv"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestEachLinesAndWidths(t *testing.T) {
	var lines []int
	var widths []int
	err := Each(strings.NewReader("a;b\n\n1; 2;3\n\"x\ny\";4\n5\n"), Options{Comma: ';', TrimLeadingSpace: true}, func(line int, f []string) error {
		lines = append(lines, line)
		widths = append(widths, len(f))
		if line == 3 && f[1] != "2" {
			t.Errorf("line 3 field 1 = %q, want the leading space trimmed", f[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Rows start on lines 1, 3, 4 (a quoted field over two lines) and 6; widths differ.
	if !slices.Equal(lines, []int{1, 3, 4, 6}) || !slices.Equal(widths, []int{2, 3, 2, 1}) {
		t.Errorf("lines %v widths %v, want [1 3 4 6] [2 3 2 1]", lines, widths)
	}
}

func TestEachErrors(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Each(strings.NewReader("1\n2\n3\n"), Options{}, func(line int, _ []string) error {
		n++
		if line == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Errorf("row error: got %v after %d rows, want stop after 2", err, n)
	}

	err = Each(strings.NewReader("1\n2\"x\n"), Options{}, func(int, []string) error { return nil })
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 2 || !errors.Is(ce.Fault, csv.ErrBareQuote) || !errors.Is(err, csv.ErrBareQuote) {
		t.Errorf("bare quote: %#v, want an *Error at line 2 with fault ErrBareQuote", err)
	}

	disk := errors.New("disk")
	err = Each(io.MultiReader(strings.NewReader("1\n\n2\n"), iotest.ErrReader(disk)), Options{}, func(int, []string) error { return nil })
	if !errors.As(err, &ce) || ce.Line != 3 || ce.Fault != nil || !errors.Is(err, disk) {
		t.Errorf("reader error: %#v, want an *Error after line 3 wrapping the reader's error", err)
	}
}
