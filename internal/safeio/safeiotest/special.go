package safeiotest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Special is a file that is not a regular file, made by Specials for a test.
type Special struct {
	Name string // "fifo", "device", "symlink"
	Path string
	Kind string // as safeio.CheckRegular names it: "named pipe", "character device", "symbolic link"
}

// SpecialSet is what Specials made; Unchanged checks that it still is.
type SpecialSet struct {
	List   []Special
	Target string // the regular file the symbolic link points to
	modes  map[string]os.FileMode
}

// TargetContent is what the symbolic link's target holds.
const TargetContent = "precious: not to be truncated, replaced or written\n"

// Specials makes in dir, named after pattern with its "*" replaced by "fifo", "device"
// and "symlink" (the link's target by "target"): a
// FIFO; where the process may (as root), a character device node with /dev/zero's
// numbers (reading it gives endless zeros, writing it is discarded; being in dir, it
// is harmless even if a bug replaced it); and a symbolic link to a regular file
// holding TargetContent. A kind this system cannot make is left out.
func Specials(t testing.TB, dir, pattern string) *SpecialSet {
	t.Helper()
	s := &SpecialSet{Target: filepath.Join(dir, strings.Replace(pattern, "*", "target", 1)), modes: map[string]os.FileMode{}}
	if err := os.WriteFile(s.Target, []byte(TargetContent), 0o600); err != nil {
		t.Fatal(err)
	}
	add := func(name, kind string, make func(path string) error) {
		path := filepath.Join(dir, strings.Replace(pattern, "*", name, 1))
		if err := make(path); err != nil {
			t.Logf("no %s here: %v", name, err)
			return
		}
		st, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		s.modes[path] = st.Mode()
		s.List = append(s.List, Special{Name: name, Path: path, Kind: kind})
	}
	add("fifo", "named pipe", mkfifo)
	add("device", "character device", mkzero)
	add("symlink", "symbolic link", func(path string) error { return os.Symlink(s.Target, path) })
	return s
}

// Unchanged fails t unless every special file is still there, of the same type, no
// temporary file of a writer is left beside it, and the link's target still holds
// TargetContent.
func (s *SpecialSet) Unchanged(t testing.TB) {
	t.Helper()
	for _, sp := range s.List {
		st, err := os.Lstat(sp.Path)
		switch {
		case err != nil:
			t.Errorf("%s %s: %v", sp.Name, sp.Path, err)
		case st.Mode().Type() != s.modes[sp.Path].Type():
			t.Errorf("%s %s was replaced: it is now %v, was %v", sp.Name, sp.Path, st.Mode().Type(), s.modes[sp.Path].Type())
		}
		if tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(sp.Path), "."+filepath.Base(sp.Path)+".tmp-*")); len(tmp) > 0 {
			t.Errorf("%s %s: temporary files left beside it: %v", sp.Name, sp.Path, tmp)
		}
	}
	if b, err := os.ReadFile(s.Target); err != nil || !bytes.Equal(b, []byte(TargetContent)) {
		t.Errorf("the symbolic link's target %s now holds %q (%v), want %q", s.Target, b, err, TargetContent)
	}
}
