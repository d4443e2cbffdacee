package predictcmd

import (
	"bytes"
	"compress/gzip"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/models"
)

// A file whose name says nothing (not .png, .jpg, .jpeg, .csv) is read by its content:
// a PNG image as an image, IDX as IDX; anything else is refused in one line that says
// what the file looks like and what predict reads, with exit status 2 (it was
// "file ends early: incomplete header" for a short text file, exit 1).
func TestPredictSniffsContent(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 128)
	ckpt := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	png := filepath.Join(dir, "digit.dat")
	writePNG(t, png, image.NewGray(image.Rect(0, 0, 28, 28)))
	if code, stdout, stderr := runPredict("-checkpoint", ckpt, png); code != 0 || !strings.HasPrefix(stdout, "input,class,label,p0") {
		t.Errorf("a PNG image named .dat: exit %d, %q %q", code, stdout, stderr)
	}
	var labels bytes.Buffer
	zw := gzip.NewWriter(&labels)
	zw.Write([]byte{0, 0, 8, 1, 0, 0, 0, 1, 7}) // an IDX labels file: one label
	zw.Close()
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"short.txt", []byte("ab\n"), `it is text, starting "ab"`},
		{"numbers.txt", []byte("0.5,0.25\n"), `it is text, starting "0.5,0.25" (a table of numbers must be named .csv)`},
		{"empty.dat", nil, "the file is empty"},
		{"cat.gif", []byte("GIF89a\x01\x00\x01\x00"), "it is a GIF image"},
		{"blob.bin", []byte{0x00, 0x01, 0xfe, 0x80, 0x13}, "binary data starting 00 01 fe 80 13"},
		{"raw-labels-idx1-ubyte", []byte{0, 0, 8, 1, 0, 0, 0, 1, 7}, "an IDX file of bytes in 1 dimension (labels?), not images"},
		{"labels-idx1-ubyte.gz", labels.Bytes(), "not an IDX image file"},
	} {
		p := write(tc.name, tc.data)
		code, _, stderr := runPredict("-checkpoint", ckpt, p)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, %q; want exit 2 and one line with %q", tc.name, code, stderr, tc.want)
		}
		if !strings.Contains(stderr, "PNG") {
			t.Errorf("%s: %q does not say what predict reads", tc.name, stderr)
		}
	}
}
