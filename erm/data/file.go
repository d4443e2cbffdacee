package data

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/privtrain/privtrain/internal/safeio"
)

// Format names a file format understood by ReadFile.
type Format string

const (
	// FormatAuto picks CSV for names ending in .csv (or .csv.gz) and LIBSVM
	// otherwise.
	FormatAuto Format = ""
	// FormatLIBSVM is the sparse "label index:value …" text format.
	FormatLIBSVM Format = "libsvm"
	// FormatCSV is numeric comma-separated values with a label column.
	FormatCSV Format = "csv"
)

// maxDecompressed bounds the text of a gzipped data file: DefaultMaxElements values of
// up to 32 characters each, far more than a real file, so that a gzip bomb of nothing but
// blank lines or comments is refused instead of being read for hours. A variable for
// the tests.
var maxDecompressed int64 = DefaultMaxElements * 32

// ReadFile reads a LIBSVM or CSV file, gzip-compressed or not (detected
// from the content), with the reader's default options. Errors name the file.
func ReadFile(path string, format Format) (*Dataset, error) {
	f, err := safeio.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	name := path
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("data: %s: %w", path, err)
		}
		defer zr.Close()
		r = safeio.LimitReader(zr, maxDecompressed, path+": decompressed data")
		name = strings.TrimSuffix(name, ".gz")
	}
	if format == FormatAuto {
		format = FormatLIBSVM
		if strings.EqualFold(filepath.Ext(name), ".csv") {
			format = FormatCSV
		}
	}
	var ds *Dataset
	switch format {
	case FormatLIBSVM:
		ds, err = ReadLIBSVM(r, LIBSVMOptions{})
	case FormatCSV:
		ds, err = ReadCSV(r, CSVOptions{})
	default:
		return nil, fmt.Errorf("data: unknown format %q (want libsvm or csv): %w", format, ErrInvalid)
	}
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", path, err)
	}
	return ds, nil
}
