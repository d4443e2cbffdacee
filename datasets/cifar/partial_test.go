package cifar

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Files shorter than the official 10,000 records, whole records each and of different
// lengths, are read (directory and archive alike) and named in the notes; a file that is
// not record-aligned is still refused.
func TestLoad10PartialFiles(t *testing.T) {
	files := cifar10Files() // batches of 4 records, test 3
	files["data_batch_4.bin"] = batch10(12, 3)
	for _, packed := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), cifar10.dir)
		if packed {
			path = filepath.Join(t.TempDir(), cifar10.archive)
			writeDir(t, filepath.Dir(path), map[string][]byte{cifar10.archive: tarGz(t, cifar10.dir, files)})
		} else {
			writeDir(t, path, files)
		}
		var notes []string
		train, test, err := Load10(path, WithNotes(&notes))
		if err != nil {
			t.Fatalf("archive %v: %v", packed, err)
		}
		if train.Len() != 4+4+4+3+4 || test.Len() != 3 {
			t.Errorf("archive %v: %d training and %d test images, want 19 and 3", packed, train.Len(), test.Len())
		}
		want := []string{
			"data_batch_1.bin: 4 of 10,000 records (a partial file)",
			"data_batch_2.bin: 4 of 10,000 records (a partial file)",
			"data_batch_3.bin: 4 of 10,000 records (a partial file)",
			"data_batch_4.bin: 3 of 10,000 records (a partial file)",
			"data_batch_5.bin: 4 of 10,000 records (a partial file)",
			"test_batch.bin: 3 of 10,000 records (a partial file)",
		}
		if !slices.Equal(notes, want) {
			t.Errorf("archive %v: notes %q\nwant %q", packed, notes, want)
		}
		var trainOnly []string
		if _, te, err := Load10(path, TrainOnly(), WithNotes(&trainOnly)); err != nil || te != nil || !slices.Equal(trainOnly, want[:5]) {
			t.Errorf("archive %v, TrainOnly: %v, test %v, notes %q", packed, err, te, trainOnly)
		}
	}
	// One byte short of 3 records: not record-aligned, refused by name.
	files["data_batch_4.bin"] = batch10(12, 3)[:3*3073-1]
	path := filepath.Join(t.TempDir(), cifar10.dir)
	writeDir(t, path, files)
	if _, _, err := Load10(path); !errors.Is(err, ErrRecordSize) || !strings.Contains(err.Error(), "data_batch_4.bin") ||
		!strings.Contains(err.Error(), "9218 bytes") {
		t.Errorf("a file of 3 records less one byte: %v, want ErrRecordSize naming it", err)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1017: "1,017", 10000: "10,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// sampleDir is the CIFAR-10 sample of the shared data directory (the first 1,017
// records of each official batch, see its README), next to the repository.
const sampleDir = "../../../shared/data/cifar10-sample"

func needSample(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sampleDir, "data_batch_1.bin")); err != nil {
		t.Skipf("the CIFAR-10 sample is not at %s (%v): skipped", sampleDir, err)
	}
}

// The sample: its files match MD5SUMS, 5 × 1,017 training and 1,017 test images, the
// first records its README quotes from published dumps of the official files, and one
// note per file.
func TestCIFAR10Sample(t *testing.T) {
	needSample(t)
	sums, err := os.ReadFile(filepath.Join(sampleDir, "MD5SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("MD5SUMS line %q", line)
		}
		data, err := os.ReadFile(filepath.Join(sampleDir, name))
		if err != nil {
			t.Fatal(err)
		}
		h := md5.Sum(data)
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("%s: MD5 %x, MD5SUMS %s", name, h, sum)
		}
		checked++
	}
	if checked != 6 {
		t.Errorf("MD5SUMS lists %d files, want 6", checked)
	}
	var notes []string
	train, test, err := Load10(sampleDir, WithNotes(&notes))
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 5085 || test.Len() != 1017 {
		t.Errorf("%d training and %d test images, want 5,085 and 1,017", train.Len(), test.Len())
	}
	if len(notes) != 6 || notes[0] != "data_batch_1.bin: 1,017 of 10,000 records (a partial file)" ||
		notes[5] != "test_batch.bin: 1,017 of 10,000 records (a partial file)" {
		t.Errorf("notes %q", notes)
	}
	// data_batch_1 record 0: label 6 (frog), red plane starting 59, 43, 50 (scaled to [0, 1]).
	x := make([]float32, 3072)
	if y := train.Example(0, x); y != 6 || Classes10[y] != "frog" {
		t.Errorf("training record 0: label %d, want 6 (frog)", y)
	}
	for i, want := range []float32{59, 43, 50} {
		if got := x[i] * 255; got < want-1e-3 || got > want+1e-3 {
			t.Errorf("training record 0, pixel %d: %v/255, README %v", i, got, want)
		}
	}
	if yt := test.Example(0, x); yt != 3 || Classes10[yt] != "cat" {
		t.Errorf("test record 0: label %d, want 3 (cat)", yt)
	}
}
