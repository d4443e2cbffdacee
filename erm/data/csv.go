package data

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/internal/csvrows"
	"github.com/privtrain/privtrain/internal/safeio"
)

// Header says whether a CSV file starts with a header line.
type Header int

const (
	// HeaderAuto treats the first line as a header when one of its fields is
	// not a number (scikit-learn's "569,30,malignant,benign", or column names).
	HeaderAuto Header = iota
	// HeaderYes always skips the first line.
	HeaderYes
	// HeaderNo parses the first line as data.
	HeaderNo
)

// CSVOptions configures ReadCSV. The zero value reads comma-separated
// numbers with the label in the last column and detects a header.
type CSVOptions struct {
	// LabelColumn is the 1-based column holding the label; 0 means the last.
	LabelColumn int
	// Comma is the field separator; 0 means ','.
	Comma rune
	// Header says whether the first line is a header.
	Header Header
	// MaxElements caps n·d, as in LIBSVMOptions; 0 means DefaultMaxElements.
	MaxElements int
}

// ReadCSV parses numeric CSV: one example per line, every field a finite
// number, one of them the label. Every line must have as many fields as the
// first data line. A scikit-learn header ("n_samples,n_features,names…") is
// checked against the body: a file with fewer or more rows than it announces
// is reported as truncated or corrupt. Errors wrap ErrFormat and name the
// line.
func ReadCSV(r io.Reader, opts CSVOptions) (*Dataset, error) {
	maxElems := opts.MaxElements
	if maxElems <= 0 {
		maxElems = DefaultMaxElements
	}
	if opts.LabelColumn < 0 {
		return nil, fmt.Errorf("csv: label column %d: want 1-based column or 0 for the last: %w", opts.LabelColumn, ErrInvalid)
	}
	var (
		header   []string
		headerLn int
		first    = true
		cols     int
		labelCol int
		labels   []float64
		values   []float64
	)
	err := csvrows.Each(r, csvrows.Options{Comma: opts.Comma, TrimLeadingSpace: true}, func(line int, rec []string) error {
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			return nil // blank line
		}
		if first {
			first = false
			isHeader := opts.Header == HeaderYes
			if opts.Header == HeaderAuto {
				for _, f := range rec {
					if _, err := parseField(f); err != nil {
						isHeader = true
						break
					}
				}
			}
			if isHeader {
				header = append([]string(nil), rec...)
				headerLn = line
				return nil
			}
		}
		if cols == 0 {
			cols = len(rec)
			if cols < 2 {
				return fmt.Errorf("csv: line %d: %d field; need features and a label: %w", line, cols, ErrFormat)
			}
			labelCol = cols - 1
			if opts.LabelColumn > 0 {
				if opts.LabelColumn > cols {
					return fmt.Errorf("csv: line %d: label column %d but only %d fields: %w", line, opts.LabelColumn, cols, ErrFormat)
				}
				labelCol = opts.LabelColumn - 1
			}
		}
		if len(rec) != cols {
			return fmt.Errorf("csv: line %d: %d fields, want %d like the first data line: %w", line, len(rec), cols, ErrFormat)
		}
		if len(labels)+1 > maxElems/cols {
			return fmt.Errorf("csv: line %d: more than %d elements: %w", line, maxElems, ErrFormat)
		}
		for j, f := range rec {
			v, err := parseField(f)
			if err != nil {
				return fmt.Errorf("csv: line %d, column %d: %q is not a finite number: %w", line, j+1, clipString(f), ErrFormat)
			}
			if j == labelCol {
				labels = append(labels, v)
			} else {
				values = append(values, v)
			}
		}
		return nil
	})
	if ce, ok := err.(*csvrows.Error); ok {
		if le := (*safeio.LineError)(nil); errors.As(ce.Err, &le) {
			return nil, fmt.Errorf("csv: %v; the file is not CSV data, or is damaged: %w", le, ErrFormat)
		}
		if ce.Fault != nil {
			return nil, fmt.Errorf("csv: line %d: %v: %w", ce.Line, ce.Fault, ErrFormat)
		}
		return nil, fmt.Errorf("csv: after line %d: %w", ce.Line, ce.Err)
	}
	if err != nil {
		return nil, err
	}
	if len(labels) == 0 {
		return nil, fmt.Errorf("csv: no data lines: %w", ErrFormat)
	}
	if err := checkSklearnHeader(header, headerLn, len(labels), cols-1); err != nil {
		return nil, err
	}
	return &Dataset{X: mat.NewDense(len(labels), cols-1, values), Y: labels}, nil
}

// checkSklearnHeader verifies scikit-learn's "n_samples,n_features,…" header
// when the first two fields are integers and n_features matches the body.
func checkSklearnHeader(header []string, line, n, d int) error {
	if len(header) < 2 {
		return nil
	}
	hn, err1 := strconv.Atoi(strings.TrimSpace(header[0]))
	hd, err2 := strconv.Atoi(strings.TrimSpace(header[1]))
	if err1 != nil || err2 != nil || hd != d {
		return nil
	}
	if hn != n {
		return fmt.Errorf("csv: line %d: header announces %d examples but the file holds %d (truncated or corrupt?): %w", line, hn, n, ErrFormat)
	}
	return nil
}

func parseField(f string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("not finite")
	}
	return v, nil
}

func clipString(s string) string { return clip([]byte(s)) }
