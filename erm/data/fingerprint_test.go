package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// The fingerprint is the documented layout, built here byte by byte for a 2×1 data set.
func TestFingerprint(t *testing.T) {
	ds := &Dataset{X: mat.NewDense(2, 1, []float64{0.5, -2}), Y: []float64{1, -1}}
	var b []byte
	b = append(b, "privtrain-erm-data-v1\x00"...)
	b = append(b, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0)
	b = append(b, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f) // 0.5
	b = append(b, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f) // 1
	b = append(b, 0, 0, 0, 0, 0, 0, 0x00, 0xc0) // −2
	b = append(b, 0, 0, 0, 0, 0, 0, 0xf0, 0xbf) // −1
	h := sha256.Sum256(b)
	if got := ds.Fingerprint(); got != hex.EncodeToString(h[:]) {
		t.Errorf("fingerprint %s, want %x", got, h)
	}
	ds.Y[1] = 1
	if ds.Fingerprint() == hex.EncodeToString(h[:]) {
		t.Error("a changed label keeps the fingerprint")
	}
}

// A data set that is a view into a wider matrix (row stride > d) is fingerprinted by its
// own columns: the layout written here with encoding/binary, not the code's loop.
func TestFingerprintView(t *testing.T) {
	wide := mat.NewDense(3, 4, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	ds := &Dataset{X: wide.Slice(0, 3, 1, 3).(*mat.Dense), Y: []float64{-1, 1, 0.25}}
	var b bytes.Buffer
	b.WriteString("privtrain-erm-data-v1\x00")
	binary.Write(&b, binary.LittleEndian, []uint64{3, 2})
	binary.Write(&b, binary.LittleEndian, []float64{2, 3, -1, 6, 7, 1, 10, 11, 0.25})
	if got, want := ds.Fingerprint(), sha256.Sum256(b.Bytes()); got != hex.EncodeToString(want[:]) {
		t.Errorf("fingerprint %s, want %x", got, want)
	}
}

// TestFingerprintPinned pins the key of a real file, as the budget stores of earlier
// versions recorded it (a bitwise pin across the move of the fingerprint from cmd/erm
// into this package): the value was computed by main's ermcmd.dataFingerprint and,
// independently, by a Python reading of the LIBSVM file that hashes the documented layout
// with struct.pack('<QQ', n, d) and '<68d' per row.
func TestFingerprintPinned(t *testing.T) {
	ds, err := ReadFile("testdata/phishing.gz", FormatLIBSVM)
	if err != nil {
		t.Fatal(err)
	}
	const want = "73c9a6c229d173ab5d443e2ad93e52a863f5f43970cb2e641f4356714b1e331c"
	if got := ds.Fingerprint(); ds.Len() != 11055 || ds.Dim() != 68 || got != want {
		t.Errorf("phishing: %d×%d, fingerprint %s; want 11055×68, %s", ds.Len(), ds.Dim(), got, want)
	}
}
