package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestStaticBinary: "go build ./cmd/train" gives a static binary even where cgo is
// available, as the README promises. Packages that use cgo on Linux when it is enabled
// (net for its resolver, os/user for user lookups, hence net/http and archive/tar) must
// not be linked: the dependency list must not hold them, and the ELF file built with
// CGO_ENABLED=1 must have no interpreter (PT_INTERP) and no shared libraries
// (DT_NEEDED).
func TestStaticBinary(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	list := exec.Command(gobin, "list", "-deps", ".")
	list.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch pkg {
		case "net", "os/user", "runtime/cgo", "plugin":
			t.Errorf("cmd/train depends on %s, which links libc when cgo is enabled (go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/train shows who imports it)", pkg)
		}
	}
	if testing.Short() {
		t.Skip("builds the command")
	}
	if runtime.GOOS != "linux" {
		t.Skip("checks an ELF binary")
	}
	bin := filepath.Join(t.TempDir(), "train")
	build := exec.Command(gobin, "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	checkStatic(t, bin)
}

// checkStatic checks that the ELF file bin has no interpreter, no dynamic section and
// needs no shared library.
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is dynamically linked", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
}

// TestPostgresBuildStatic: the build with database stores (go build -tags postgres, which
// links the pure-Go PostgreSQL client pgx and so net and os/user) is static and free of
// cgo with CGO_ENABLED=0 (docs/install.md, docs/budget.md).
func TestPostgresBuildStatic(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	list := exec.Command(gobin, "list", "-deps", "-tags", "postgres", ".")
	list.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list -deps -tags postgres: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/jackc/pgx/v5") {
		t.Errorf("cmd/train -tags postgres does not link pgx")
	}
	if slices.Contains(deps, "runtime/cgo") {
		t.Errorf("cmd/train -tags postgres with CGO_ENABLED=0 depends on runtime/cgo")
	}
	if testing.Short() {
		t.Skip("builds the command")
	}
	if runtime.GOOS != "linux" {
		t.Skip("checks an ELF binary")
	}
	bin := filepath.Join(t.TempDir(), "train")
	build := exec.Command(gobin, "build", "-tags", "postgres", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	v, err := exec.Command(gobin, "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(v), "CGO_ENABLED=0") || !strings.Contains(string(v), "-tags=postgres") {
		t.Errorf("go version -m: want CGO_ENABLED=0 and -tags=postgres:\n%s", v)
	}
	checkStatic(t, bin)
}
