package tensorfile_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/privtrain/privtrain/nn/tensorfile"
)

// TestZstdCLI checks the documented inspection path: the reference zstd tool
// decompresses a checkpoint, skipping the trailer, to the safetensors stream.
func TestZstdCLI(t *testing.T) {
	zstdPath, err := exec.LookPath("zstd")
	if err != nil {
		t.Skip("zstd command not installed")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "run.ckpt")
	if err := tensorfile.WriteFile(path, smallCheckpoint()); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(zstdPath, "-q", "-t", path).CombinedOutput(); err != nil {
		t.Fatalf("zstd -t: %v\n%s", err, out)
	}
	out, err := exec.Command(zstdPath, "-q", "-d", "-c", path).Output()
	if err != nil {
		t.Fatalf("zstd -d: %v", err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := decompress(t, raw[:len(raw)-48]); !bytes.Equal(out, want) {
		t.Errorf("zstd -d gave %d bytes, the data frame holds %d", len(out), len(want))
	}
}
