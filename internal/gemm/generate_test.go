package gemm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedKernelsUpToDate regenerates the assembly kernels and their Go switches and
// checks that the committed files are exactly the generator's output: a hand edit of
// kernels_amd64.s, or a generator change without `go generate`, fails here.
func TestGeneratedKernelsUpToDate(t *testing.T) {
	checkGenerated(t, "gen_kernels.go", "kernels_amd64.s", "kernels_amd64.go")
}

// checkGenerated runs generator with -out into a temporary folder and checks that each of
// files is exactly what it wrote.
func checkGenerated(t *testing.T, generator string, files ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the generator")
	}
	// go test puts the go command that runs it first on PATH.
	dir := t.TempDir()
	cmd := exec.Command("go", "run", generator, "-out", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run %s: %v\n%s", generator, err, out)
	}
	for _, name := range files {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the output of %s: run go generate ./internal/gemm", name, generator)
		}
	}
}
