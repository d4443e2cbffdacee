package data

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/internal/safeio"
)

// LIBSVMOptions configures ReadLIBSVM. The zero value infers the dimension.
type LIBSVMOptions struct {
	// Features fixes the dimension d (a test file may use fewer features
	// than its training file); indices above it are an error. Zero means d is
	// the largest index in the file.
	Features int
	// MaxElements caps n·d of the dense matrix built from the file, so a
	// corrupt index cannot exhaust memory. Zero means DefaultMaxElements.
	MaxElements int
}

// DefaultMaxElements is the default cap on n·d of a data set read from a file:
// 2²⁶ float64 values (512 MiB), so that a hostile file is refused within 1 GB
// while real ERM data sets (covtype: 581,012 × 54 = 31 M) fit.
const DefaultMaxElements = 1 << 26

// ReadLIBSVM parses the sparse text format of LIBSVM/SVMlight:
//
//	<label> <index>:<value> <index>:<value> …
//
// one example per line, indices 1-based and strictly increasing, absent
// features zero. Labels may be ±1, 0/1, other class codes or real targets;
// they are returned unchanged (see Dataset.BinaryLabels). Blank lines and
// text after '#' are ignored. Errors wrap ErrFormat and name the line.
func ReadLIBSVM(r io.Reader, opts LIBSVMOptions) (*Dataset, error) {
	if opts.Features < 0 {
		return nil, fmt.Errorf("libsvm: negative feature count %d: %w", opts.Features, ErrInvalid)
	}
	maxElems := opts.MaxElements
	if maxElems <= 0 {
		maxElems = DefaultMaxElements
	}
	type entry struct {
		col int
		val float64
	}
	var (
		labels  []float64
		rows    [][]entry
		maxIdx  int
		lineNum int
		nnz     int
	)
	// The line limit names the line that is too long; the scanner's own limit, past it,
	// is never reached.
	sc := bufio.NewScanner(safeio.LineLimit(r, safeio.MaxLine))
	sc.Buffer(make([]byte, 64*1024), safeio.MaxLine+2)
	for sc.Scan() {
		lineNum++
		line := sc.Bytes()
		if k := bytes.IndexByte(line, '#'); k >= 0 {
			line = line[:k]
		}
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			continue
		}
		y, err := strconv.ParseFloat(string(fields[0]), 64)
		if err != nil || math.IsNaN(y) || math.IsInf(y, 0) {
			return nil, fmt.Errorf("libsvm: line %d: label %q is not a finite number: %w", lineNum, clip(fields[0]), ErrFormat)
		}
		row := make([]entry, 0, len(fields)-1)
		prev := 0
		for _, f := range fields[1:] {
			colon := bytes.IndexByte(f, ':')
			if colon < 0 {
				return nil, fmt.Errorf("libsvm: line %d: %q is not index:value: %w", lineNum, clip(f), ErrFormat)
			}
			idx, err := strconv.Atoi(string(f[:colon]))
			if err != nil || idx < 1 {
				return nil, fmt.Errorf("libsvm: line %d: feature index %q is not an integer ≥ 1 (indices are 1-based): %w", lineNum, clip(f[:colon]), ErrFormat)
			}
			if idx <= prev {
				return nil, fmt.Errorf("libsvm: line %d: feature index %d after %d; indices must be strictly increasing: %w", lineNum, idx, prev, ErrFormat)
			}
			if opts.Features > 0 && idx > opts.Features {
				return nil, fmt.Errorf("libsvm: line %d: feature index %d exceeds the %d features requested: %w", lineNum, idx, opts.Features, ErrFormat)
			}
			if idx > maxElems {
				return nil, fmt.Errorf("libsvm: line %d: feature index %d is implausibly large (limit %d elements): %w", lineNum, idx, maxElems, ErrFormat)
			}
			val, err := strconv.ParseFloat(string(f[colon+1:]), 64)
			if err != nil || math.IsNaN(val) || math.IsInf(val, 0) {
				return nil, fmt.Errorf("libsvm: line %d: value %q of feature %d is not a finite number: %w", lineNum, clip(f[colon+1:]), idx, ErrFormat)
			}
			prev = idx
			maxIdx = max(maxIdx, idx)
			if val != 0 {
				row = append(row, entry{idx - 1, val})
			}
		}
		nnz += len(row)
		labels = append(labels, y)
		rows = append(rows, row)
		if d := max(maxIdx, opts.Features, 1); len(rows) > maxElems/d {
			return nil, fmt.Errorf("libsvm: line %d: %d examples × %d features exceed the limit of %d elements: %w", lineNum, len(rows), d, maxElems, ErrFormat)
		}
	}
	if err := sc.Err(); err != nil {
		if le := (*safeio.LineError)(nil); errors.As(err, &le) {
			return nil, fmt.Errorf("libsvm: %v; the file is not LIBSVM data, or is damaged: %w", le, ErrFormat)
		}
		return nil, fmt.Errorf("libsvm: after line %d: %w", lineNum, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("libsvm: no examples: %w", ErrFormat)
	}
	d := maxIdx
	if opts.Features > 0 {
		d = opts.Features
	}
	if d == 0 {
		return nil, fmt.Errorf("libsvm: no features on any line (set Features for an all-zero file): %w", ErrFormat)
	}
	x := mat.NewDense(len(rows), d, nil)
	for i, row := range rows {
		dst := x.RawRowView(i)
		for _, e := range row {
			dst[e.col] = e.val
		}
	}
	return &Dataset{X: x, Y: labels}, nil
}

// clip shortens a field quoted in an error message.
func clip(b []byte) string {
	const n = 40
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
