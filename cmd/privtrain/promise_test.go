package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpPromiseKept: privtrain help says that privacy computes the ε of "a
// checkpoint's ledger", and privacy epsilon takes -checkpoint FILE (issue 41: it was
// "flag provided but not defined"); a missing file is the only complaint here.
func TestHelpPromiseKept(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "a checkpoint's ledger") {
		t.Fatalf("privtrain help: exit %d, %s%s", code, out.String(), errb.String())
	}
	// The subcommands write to os.Stderr: read it through a pipe.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	missing := filepath.Join(t.TempDir(), "m.ckpt")
	code := run([]string{"privacy", "epsilon", "-checkpoint", missing}, io.Discard, io.Discard)
	os.Stderr = stderr
	w.Close()
	got, _ := io.ReadAll(r)
	if want := "privacy epsilon: -checkpoint " + missing + ": no such file\n"; code != 2 || string(got) != want {
		t.Errorf("privacy epsilon -checkpoint MISSING: exit %d, %q; want exit 2, %q", code, got, want)
	}
}
