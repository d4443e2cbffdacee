package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/privtrain/privtrain"

// rows are the layers of docs/architecture.md, top (commands) to bottom (the ground): a
// package may import packages of its own row or of lower rows only. Every package main
// and everything under cmd/, bench/ and scripts/ is a command (row 0); everything under
// the root internal/ is the ground. A package in no row fails the test: a new package
// takes its place here and in the doc's map.
var rows = [][]string{
	{"audit", "tuning"},
	{"training"},
	{"models", "export"},
	{"nn"},
	{"layers", "layers/layertest", "nn/checkpoint"},
	{"clipping", "clipping/clippingtest", "scatter", "prior", "smoothing", "dpoptim", "erm", "budget"},
	{"accountant", "datasets", "datasets/cifar", "datasets/mnist", "datasets/mnist/download", "datasets/datatest", "erm/data", "erm/data/download", "nn/tensorfile"},
}

// pkg is one package of the module: its path below the module and what it imports from
// the module (non-test files only).
type pkg struct {
	isMain  bool
	imports []string
}

func modulePackages(t *testing.T, root string) map[string]*pkg {
	t.Helper()
	pkgs := map[string]*pkg{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if generator(f) {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		p := pkgs[rel]
		if p == nil {
			p = &pkg{}
			pkgs[rel] = p
		}
		p.isMain = p.isMain || f.Name.Name == "main"
		for _, is := range f.Imports {
			ip, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return err
			}
			if rest, ok := strings.CutPrefix(ip, module+"/"); ok && !slices.Contains(p.imports, rest) {
				p.imports = append(p.imports, rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// generator reports whether f is a go:generate program kept out of every build by a
// "//go:build ignore" line (internal/gemm's kernel generators).
func generator(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.TrimSpace(c.Text) == "//go:build ignore" {
				return true
			}
		}
	}
	return false
}

const (
	command = 0
	ground  = 1 << 20
)

// rank returns the row of package path (0 for commands, ground for internal/), and false
// for a package in no row.
func rank(path string, p *pkg) (int, bool) {
	switch {
	case p != nil && p.isMain, strings.HasPrefix(path, "cmd/"), strings.HasPrefix(path, "bench/"), strings.HasPrefix(path, "scripts/"):
		return command, true
	case strings.HasPrefix(path, "internal/"):
		return ground, true
	}
	for i, row := range rows {
		if slices.Contains(row, path) {
			return i + 1, true
		}
	}
	return 0, false
}

// TestImportLayers: every import of the module's own packages goes to the importer's row
// or a lower one, and nothing under the root internal/ imports a package outside it.
// The test reads the files itself (go/parser), so it also covers files that a build tag
// leaves out on this machine (the OpenBLAS build, other architectures).
func TestImportLayers(t *testing.T) {
	pkgs := modulePackages(t, "../..")
	if len(pkgs) < 30 {
		t.Fatalf("found %d packages: not the module's root", len(pkgs))
	}
	for path, p := range pkgs {
		r, ok := rank(path, p)
		if !ok {
			t.Errorf("%s is in no layer: add it to rows here and to docs/architecture.md", path)
			continue
		}
		for _, imp := range p.imports {
			ir, ok := rank(imp, pkgs[imp])
			switch {
			case !ok:
				continue // reported as the importer of nothing above
			case r == ground && ir != ground:
				t.Errorf("%s (internal/) imports the product package %s", path, imp)
			case ir < r:
				t.Errorf("%s (row %d) imports %s of a higher row (%d)", path, r, imp, ir)
			}
		}
	}
}

// TestPackageMapComplete: docs/architecture.md's package table names every package of
// the module (each in backticks, alone or in a list such as `cmd/train`, `cmd/erm`).
func TestPackageMapComplete(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell := strings.SplitN(line, "|", 3)[1]
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cell, -1) {
			named[m[1]] = true
		}
	}
	for path := range modulePackages(t, "../..") {
		if !named[path] {
			t.Errorf("docs/architecture.md's package map does not list %s", path)
		}
	}
}
