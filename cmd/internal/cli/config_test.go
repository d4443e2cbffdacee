package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func configFlags() (*flag.FlagSet, *float64, *int, *string, *bool) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	lr := fs.Float64("lr", 0.1, "")
	epochs := fs.Int("epochs", 1, "")
	name := fs.String("name", "", "")
	json := fs.Bool("json", false, "")
	fs.String("config", "", "")
	return fs, lr, epochs, name, json
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.conf")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestApplyConfig: the file's flags are set unless given on the command line, in both
// spellings of a name, with comments, blank lines and quoted values.
func TestApplyConfig(t *testing.T) {
	fs, lr, epochs, name, json := configFlags()
	path := writeConfig(t, "# a run\n\nlr = 0.5\n  -epochs=7  \nname = \"a b = c\"\njson = true\n")
	set, err := ApplyConfig(fs, path, "config", map[string]bool{"epochs": true})
	if err != nil {
		t.Fatal(err)
	}
	if *lr != 0.5 || *epochs != 1 || *name != "a b = c" || !*json {
		t.Errorf("lr %v epochs %v name %q json %v; want 0.5, 1 (the command line's), \"a b = c\", true", *lr, *epochs, *name, *json)
	}
	if strings.Join(set, ",") != "lr,name,json" {
		t.Errorf("set %v, want lr, name, json", set)
	}
}

// TestApplyConfigErrors: every bad line is a one-line usage error naming the file and line.
func TestApplyConfigErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"lr 0.5\n", `:1: "lr 0.5" is not name = value`},
		{"# ok\nlearning-rate = 1\n", ":2: unknown flag -learning-rate"},
		{"lr = 1\nlr = 2\n", ":2: -lr is already set on line 1"},
		{"epochs = many\n", ":1: -epochs many: parse error"},
		{"config = other.conf\n", ":1: a config file cannot name another"},
		{`name = "open` + "\n", ":1: -name: the value is not a quoted string"},
		{"name = " + strings.Repeat("x", 70<<10) + "\n", "a line longer than"},
	} {
		fs, _, _, _, _ := configFlags()
		path := writeConfig(t, tc.text)
		_, err := ApplyConfig(fs, path, "config", nil)
		if err == nil || !strings.Contains(err.Error(), "-config "+path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want an error naming the file and saying %q", tc.text, err, tc.want)
		}
	}
	fs, _, _, _, _ := configFlags()
	if _, err := ApplyConfig(fs, filepath.Join(t.TempDir(), "missing"), "config", nil); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzApplyConfig: no input panics, and whatever it accepts sets only known flags.
func FuzzApplyConfig(f *testing.F) {
	for _, s := range []string{"lr = 1\n", "# c\n-epochs=3\n", "name = \"x\"\n", "=\n", "json\n", "\x00=\xff"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(dir, "fuzz.conf")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		fs, _, _, _, _ := configFlags()
		set, err := ApplyConfig(fs, path, "config", nil)
		if err != nil {
			return
		}
		for _, name := range set {
			if fs.Lookup(name) == nil || name == "config" {
				t.Fatalf("set %q", name)
			}
		}
	})
}
