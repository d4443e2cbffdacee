package tensorfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/internal/atomicfile"
)

func version(n float64) *File {
	return &File{
		Tensors:  map[string]Tensor{"w": F64([]int{2}, []float64{n, -n}), "step": I64(nil, []int64{int64(n)})},
		Metadata: map[string]string{"version": strings.Repeat("v", int(n))},
	}
}

// wantVersion checks that path holds version(n).
func wantVersion(t *testing.T, path string, n float64) {
	t.Helper()
	f, err := ReadFile(path)
	if err != nil {
		t.Fatalf("previous checkpoint unreadable: %v", err)
	}
	w, err := f.Tensors["w"].Float64s()
	if err != nil || !slices.Equal(w, []float64{n, -n}) || f.Metadata["version"] != strings.Repeat("v", int(n)) {
		t.Fatalf("checkpoint holds w = %v (%v), metadata %v; want version %v", w, err, f.Metadata, n)
	}
}

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.ckpt")
	for _, n := range []float64{1, 2} { // the second write replaces the first
		if err := WriteFile(path, version(n)); err != nil {
			t.Fatal(err)
		}
		wantVersion(t, path, n)
	}
	if got := dirEntries(t, dir); !slices.Equal(got, []string{"run.ckpt"}) {
		t.Errorf("directory holds %v, want only run.ckpt", got)
	}
	if runtime.GOOS != "windows" {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, want 0600", st.Mode().Perm())
		}
	}
	// A relative path in the working directory.
	t.Chdir(dir)
	if err := WriteFile("rel.ckpt", version(3)); err != nil {
		t.Fatal(err)
	}
	wantVersion(t, "rel.ckpt", 3)
}

// failingWriter fails once n bytes have passed through it.
type failingWriter struct {
	w io.Writer
	n int
}

var errDiskFull = errors.New("simulated disk failure")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, errDiskFull
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// TestWriteFileInterrupted fails the write at many points; each time the previous
// checkpoint must stay loadable and no temporary file may remain.
func TestWriteFileInterrupted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.ckpt")
	if err := WriteFile(path, version(1)); err != nil {
		t.Fatal(err)
	}
	var full bytes.Buffer
	if err := Encode(&full, version(2)); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 8, 20, full.Len() / 2, full.Len() - trailerSize, full.Len() - 1} {
		err := writeFile(path, version(2), nil, func(w io.Writer) io.Writer { return &failingWriter{w, n} })
		if !errors.Is(err, errDiskFull) || !strings.Contains(err.Error(), path) {
			t.Errorf("failing after %d of %d bytes: error %v, want the disk failure naming the path", n, full.Len(), err)
		}
		wantVersion(t, path, 1)
		if got := dirEntries(t, dir); !slices.Equal(got, []string{"run.ckpt"}) {
			t.Errorf("failing after %d bytes: directory holds %v", n, got)
		}
	}
	// An invalid File never reaches the disk either.
	bad := &File{Tensors: map[string]Tensor{"w": {DType: Float64, Shape: []int{3}, Data: make([]byte, 8)}}}
	if err := WriteFile(path, bad); err == nil {
		t.Error("WriteFile of an invalid File succeeded")
	}
	wantVersion(t, path, 1)
	if got := dirEntries(t, dir); !slices.Equal(got, []string{"run.ckpt"}) {
		t.Errorf("after an invalid File: directory holds %v", got)
	}
}

// TestWriteFileCrash kills a writer process between writing the temporary file and
// renaming it: the previous checkpoint must stay loadable, and the leftover temporary
// file is the documented ".run.ckpt.tmp-*".
func TestWriteFileCrash(t *testing.T) {
	if path := os.Getenv("CHECKPOINT_CRASH_PATH"); path != "" {
		atomicfile.BeforeRename = func(string) { os.Exit(7) } // as abrupt as SIGKILL: no deferred cleanup runs
		WriteFile(path, version(2))
		os.Exit(0) // not reached if the hook ran
	}
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "run.ckpt")
	if err := WriteFile(path, version(1)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFileCrash$")
	cmd.Env = append(os.Environ(), "CHECKPOINT_CRASH_PATH="+path)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("writer process: %v, want exit status 7; output:\n%s", err, out)
	}
	wantVersion(t, path, 1)
	names := dirEntries(t, dir)
	if len(names) != 2 || !slices.Contains(names, "run.ckpt") {
		t.Fatalf("directory holds %v, want run.ckpt and one temporary file", names)
	}
	for _, name := range names {
		if name != "run.ckpt" {
			if ok, _ := filepath.Match(".run.ckpt.tmp-*", name); !ok {
				t.Errorf("leftover %q does not match the documented pattern", name)
			}
			// The leftover is a complete new checkpoint; only the rename was lost.
			wantVersion(t, filepath.Join(dir, name), 2)
		}
	}
	// The writer is dead: the next successful write of the same path removes its leftover.
	if err := WriteFile(path, version(3)); err != nil {
		t.Fatal(err)
	}
	wantVersion(t, path, 3)
	if names := dirEntries(t, dir); !slices.Equal(names, []string{"run.ckpt"}) {
		t.Errorf("after the next write the directory holds %v, want only run.ckpt", names)
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.ckpt")
	if _, err := ReadFile(missing); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir", "x.ckpt"), version(1)); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not a checkpoint"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(text)
	if !errors.Is(err, ErrNotCheckpoint) || err.Error() != "checkpoint: "+text+": not a privtrain checkpoint: not a zstd stream" {
		t.Errorf("text file: %v", err)
	}
	path := filepath.Join(dir, "run.ckpt")
	if err := WriteFile(path, version(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path, WithMaxSize(16)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("tiny limit: %v, want ErrTooLarge", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), path) {
		t.Errorf("half a file: %v, want ErrTruncated naming the path", err)
	}
}
