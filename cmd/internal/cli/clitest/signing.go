package clitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// Key is a checkpoint key for tests (at least checkpoint.MinKeyLen bytes).
const Key = "clitest key of at least sixteen bytes"

// Signed writes a copy of the checkpoint at path signed under key (checkpoint.SaveWithKey)
// into dir and returns its path.
func Signed(t testing.TB, dir, path, key string) string {
	t.Helper()
	c, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	signed := filepath.Join(dir, "signed-"+filepath.Base(path))
	if err := checkpoint.SaveWithKey(signed, c, []byte(key)); err != nil {
		t.Fatal(err)
	}
	return signed
}

// CheckSigning runs a command that reads a checkpoint (run with the arguments that
// args gives for a checkpoint path; it returns the exit status and stderr) under every
// case of the MAC rules of cli.Signing.Load, for the unsigned checkpoint plain:
//
//	signed, the right key                  → works
//	signed, another key                    → exit 2: the MAC does not verify
//	signed, no key                         → exit 2: set the key, or -allow-unsigned
//	signed, no key, -allow-unsigned        → works, with a warning
//	unsigned, a key                        → exit 2: no MAC, or -allow-unsigned
//	unsigned, a key, -allow-unsigned       → works, with a warning
//	unsigned, no key                       → works, no warning
//
// It changes PRIVTRAIN_CHECKPOINT_KEY for the test (t.Setenv), so the test must not
// be parallel.
func CheckSigning(t *testing.T, plain string, args func(ckpt string) []string, run func(args []string) (int, string)) {
	t.Helper()
	signed := Signed(t, t.TempDir(), plain, Key)
	for _, tc := range []struct {
		name      string
		ckpt, key string // key "": PRIVTRAIN_CHECKPOINT_KEY unset
		allow     bool
		code      int
		stderr    string // in stderr ("" for a clean run: no warning)
	}{
		{"signed, right key", signed, Key, false, exit.OK, ""},
		{"signed, wrong key", signed, "another key of sixteen bytes", false, exit.Usage, "does not verify"},
		{"signed, wrong key, -allow-unsigned", signed, "another key of sixteen bytes", true, exit.Usage, "does not verify"},
		{"signed, no key", signed, "", false, exit.Usage, "is signed"},
		{"signed, no key, -allow-unsigned", signed, "", true, exit.OK, "without checking"},
		{"unsigned, a key", plain, Key, false, exit.Usage, "no MAC"},
		{"unsigned, a key, -allow-unsigned", plain, Key, true, exit.OK, "without checking"},
		{"unsigned, no key", plain, "", false, exit.OK, ""},
	} {
		t.Setenv(cli.KeyEnv, tc.key)
		if tc.key == "" {
			os.Unsetenv(cli.KeyEnv) // t.Setenv restores it after the test
		}
		a := args(tc.ckpt)
		if tc.allow {
			a = append([]string{"-allow-unsigned"}, a...)
		}
		code, stderr := run(a)
		switch {
		case code != tc.code:
			t.Errorf("%s: exit %d, want %d; stderr %q", tc.name, code, tc.code, stderr)
		case tc.stderr == "" && strings.Contains(stderr, "warning"):
			t.Errorf("%s: unexpected warning %q", tc.name, stderr)
		case tc.stderr != "" && !strings.Contains(stderr, tc.stderr):
			t.Errorf("%s: stderr %q does not say %q", tc.name, stderr, tc.stderr)
		case tc.code == exit.Usage && !strings.Contains(stderr, cli.KeyEnv):
			t.Errorf("%s: stderr %q does not name %s", tc.name, stderr, cli.KeyEnv)
		}
	}
}
