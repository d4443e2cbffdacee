package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const doc = "# A doc\n\n" +
	"<!-- newcomer: short -epochs 1 -->\n" +
	"<!-- newcomer: short-skip /recipe/ slow -->\n" +
	"```\n" +
	"go run ./cmd/train -checkpoint m.ckpt   # train\n" +
	"privacy         (ε = 3, δ = 1e-05) by the RDP accountant\n" +
	"privtrain train -recipe x \\\n" +
	"   -seed 1\n" +
	"train -tune 'lr=1;x=#y' -json > out.json\n" +
	"privacy epsilon -checkpoint m.ckpt\n" +
	"curl -o x.txt https://example.org/x\n" +
	"```\n\n" +
	"<!-- newcomer: skip a synopsis -->\n" +
	"some text\n" +
	"```\n" +
	"evaluate -checkpoint m.ckpt\n" +
	"```\n"

// TestBlocks: commands are the lines that start with a command (not its output, not other
// tools), continuations joined, comments cut outside quotes; a directive belongs to the
// block right below it only, and /RE/ narrows it to matching commands.
func TestBlocks(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, err := Blocks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 {
		t.Fatalf("%d blocks, want 2: %+v", len(blocks), blocks)
	}
	want := []string{"go run ./cmd/train -checkpoint m.ckpt", "privtrain train -recipe x -seed 1",
		"train -tune 'lr=1;x=#y' -json > out.json", "privacy epsilon -checkpoint m.ckpt"}
	if b := blocks[0]; !slices.Equal(b.Commands, want) || b.Line != 5 {
		t.Errorf("commands %q at line %d, want %q at line 5", b.Commands, b.Line, want)
	}
	plans := []string{"run, with -epochs 1", "skip: with -short: slow", "run, with -epochs 1", "run"}
	for i, c := range blocks[0].Commands {
		if got := blocks[0].Plan(c, true); got != plans[i] {
			t.Errorf("%q with -short: %q, want %q", c, got, plans[i])
		}
		if got := blocks[0].Plan(c, false); got != "run" {
			t.Errorf("%q: %q, want run", c, got)
		}
	}
	if got := blocks[1].Plan(blocks[1].Commands[0], false); got != "run" {
		t.Errorf("a directive above text, not above the block, applied: %q", got)
	}
}

func TestAppendArgs(t *testing.T) {
	for c, want := range map[string]string{
		"train -json":                        "train -json -epochs 1",
		"train -print-model > res.json":      "train -print-model -epochs 1 > res.json",
		"train -tune 'a>b' -x | tee log.txt": "train -tune 'a>b' -x -epochs 1 | tee log.txt",
	} {
		if got := appendArgs(c, "-epochs 1"); got != want {
			t.Errorf("appendArgs(%q) = %q, want %q", c, got, want)
		}
	}
}

// TestDocsCommands runs every command of README.md and docs/*.md on a fresh clone of this
// repository's HEAD with the docs' short settings (go run ./scripts/newcomer -short): each
// must exit 0. Minutes of training; skipped with -short.
func TestDocsCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the docs' commands on a fresh clone")
	}
	if out, err := exec.Command("git", "-C", "../..", "rev-parse", "HEAD").CombinedOutput(); err != nil {
		t.Skipf("the checkout is not a git repository to clone (%v: %s)", err, bytes.TrimSpace(out))
	}
	var out bytes.Buffer
	code := run([]string{"-short", "-repo", "../.."}, &out, &out)
	t.Log(out.String())
	if code != 0 {
		t.Fatalf("exit %d: a command of the docs failed (above)", code)
	}
	if !strings.Contains(out.String(), "commands passed, 0 failed") {
		t.Errorf("no summary line")
	}
}
