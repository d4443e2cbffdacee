package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// A file where a folder is expected, or the wrong kind of file, is a usage error (exit
// 2) that says what the flag expects, for every data set that reads a path.
func TestDataPathOfWrongKind(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(txt, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dataset, data string
		own           DataFlags
		want          string
	}{
		{"mnist", txt, DataFlags{}, "-data " + txt + " is a file, not a directory; MNIST needs its four IDX files"},
		{"fashion-mnist", txt, DataFlags{}, "-data " + txt + " is a file, not a directory"},
		{"cifar10", txt, DataFlags{}, "not a .tar.gz archive"},
		{"cifar100", txt, DataFlags{Labels: "fine"}, "not a .tar.gz archive"},
		{"images:" + txt, "", DataFlags{TestFraction: 0.2, Labels: "fine"}, txt + " is a file, not a folder; want a folder holding one subfolder of PNG or JPEG images per class"},
		{"csv:" + dir, "", DataFlags{TestFraction: 0.2, Scale: "0:1", Header: "auto", Labels: "fine"}, "csv:PATH names a CSV file"},
	} {
		_, _, _, _, err := LoadData(tc.dataset, tc.data, &tc.own)
		if exit.Status(err) != exit.Usage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("-dataset %s -data %s: %v (exit %d); want exit 2 with %q", tc.dataset, tc.data, err, exit.Status(err), tc.want)
		}
	}
}
