package data

import (
	"errors"
	"strings"
	"testing"
)

// Checks shared by the tests of the CSV and LIBSVM readers.

// checkRead fails t unless ds holds exactly the rows wantX and labels wantY.
func checkRead(t *testing.T, ds *Dataset, wantX [][]float64, wantY []float64) {
	t.Helper()
	if ds.Len() != len(wantX) || ds.Dim() != len(wantX[0]) {
		t.Fatalf("shape %d×%d, want %d×%d", ds.Len(), ds.Dim(), len(wantX), len(wantX[0]))
	}
	for i := range wantX {
		if ds.Y[i] != wantY[i] {
			t.Errorf("Y[%d] = %v, want %v", i, ds.Y[i], wantY[i])
		}
		for j, v := range wantX[i] {
			if got := ds.X.At(i, j); got != v {
				t.Errorf("X[%d,%d] = %v, want %v", i, j, got, v)
			}
		}
	}
}

// checkReadError fails t unless err wraps one of sentinels and its message
// contains want.
func checkReadError(t *testing.T, err error, want string, sentinels ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	wraps := false
	for _, s := range sentinels {
		wraps = wraps || errors.Is(err, s)
	}
	if !wraps {
		t.Errorf("error %v wraps none of %v", err, sentinels)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
}

// checkFuzzRead is what every reader's fuzz test asserts of any input: an
// error wraps ErrFormat, and a parsed data set is consistent and passes
// Validate (finite features and labels).
func checkFuzzRead(t *testing.T, ds *Dataset, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("error %v does not wrap ErrFormat", err)
		}
		return
	}
	if ds.Len() < 1 || ds.Dim() < 1 || len(ds.Y) != ds.Len() {
		t.Fatalf("inconsistent data set %d×%d with %d labels", ds.Len(), ds.Dim(), len(ds.Y))
	}
	if err := ds.Validate(); err != nil {
		t.Fatalf("parsed data fails validation: %v", err)
	}
}
