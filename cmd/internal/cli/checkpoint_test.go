package cli_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// Signing.Load's refusals are usage errors (exit 2) that still match
// checkpoint.ErrAuthentication, name the flag and the file, and report what the MAC proved.
func TestSigningLoad(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 64)
	plain := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	signed := clitest.Signed(t, dir, plain, clitest.Key)
	var stderr bytes.Buffer
	s := &cli.Signing{Command: "cmd", Stderr: &stderr}

	t.Setenv(cli.KeyEnv, clitest.Key)
	if _, auth, err := s.Load("resume", signed); err != nil || auth != (cli.Auth{Signed: true, Verified: true}) {
		t.Errorf("signed under the key: %+v, %v", auth, err)
	}
	t.Setenv(cli.KeyEnv, "another key of sixteen bytes")
	_, _, err := s.Load("resume", signed)
	if exit.Status(err) != exit.Usage || !errors.Is(err, checkpoint.ErrAuthentication) || !strings.HasPrefix(err.Error(), "-resume "+signed) {
		t.Errorf("wrong key: status %d, %v", exit.Status(err), err)
	}
	os.Unsetenv(cli.KeyEnv)
	if _, auth, err := s.Load("resume", plain); err != nil || auth != (cli.Auth{}) || stderr.Len() != 0 {
		t.Errorf("unsigned without key: %+v, %v, stderr %q", auth, err, stderr.String())
	}
	_, _, err = s.Load("resume", signed)
	if exit.Status(err) != exit.Usage || !errors.Is(err, checkpoint.ErrAuthentication) || !strings.Contains(err.Error(), "-allow-unsigned") {
		t.Errorf("signed without key: status %d, %v", exit.Status(err), err)
	}
	s.AllowUnsigned = true
	if _, auth, err := s.Load("resume", signed); err != nil || auth != (cli.Auth{Signed: true}) || !strings.HasPrefix(stderr.String(), "cmd: warning: -resume "+signed) {
		t.Errorf("signed without key, -allow-unsigned: %+v, %v, stderr %q", auth, err, stderr.String())
	}

	if _, _, err := s.Load("resume", filepath.Join(dir, "absent.ckpt")); exit.Status(err) != exit.Usage || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: status %d, %v", exit.Status(err), err)
	}
	damaged := filepath.Join(dir, "damaged.ckpt")
	b, _ := os.ReadFile(plain)
	b[len(b)/2] ^= 0xff
	os.WriteFile(damaged, b, 0o600)
	if _, _, err := s.Load("resume", damaged); exit.Status(err) != exit.Failure || !strings.HasPrefix(err.Error(), "-resume "+damaged+": ") || strings.Contains(err.Error(), "checkpoint: "+damaged) {
		t.Errorf("damaged file: status %d, %v", exit.Status(err), err)
	}
	if _, err := cli.LoadCheckpoint("", s); exit.Status(err) != exit.Usage {
		t.Errorf("no -checkpoint: %v", err)
	}
	t.Setenv(cli.KeyEnv, "short")
	if _, _, err := s.Load("resume", plain); exit.Status(err) != exit.Usage || !strings.Contains(err.Error(), cli.KeyEnv) {
		t.Errorf("short key: %v", err)
	}
}

// SaveCheckpoint signs under KeyEnv's key exactly when it is set, so that Signing.Load
// (and checkpoint.LoadWithKey, which shares no code with the command's key reading)
// verifies what it wrote; a short key is refused before anything is written.
func TestSaveCheckpoint(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 64)
	c, err := checkpoint.Load(clitest.Checkpoint(t, dir, models.LogisticRegression(), train))
	if err != nil {
		t.Fatal(err)
	}
	signed, plain, short := filepath.Join(dir, "signed.ckpt"), filepath.Join(dir, "plain.ckpt"), filepath.Join(dir, "short.ckpt")

	t.Setenv(cli.KeyEnv, clitest.Key)
	if err := cli.SaveCheckpoint(signed, c); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.LoadWithKey(signed, []byte(clitest.Key)); err != nil {
		t.Errorf("saved with %s set: LoadWithKey: %v", cli.KeyEnv, err)
	}
	if _, err := checkpoint.LoadWithKey(signed, []byte(clitest.Key+"x")); !errors.Is(err, checkpoint.ErrAuthentication) {
		t.Errorf("saved with %s set: LoadWithKey under another key: %v, want ErrAuthentication", cli.KeyEnv, err)
	}

	t.Setenv(cli.KeyEnv, "short")
	if err := cli.SaveCheckpoint(short, c); !exit.IsUsage(err) || !strings.Contains(err.Error(), cli.KeyEnv) {
		t.Errorf("short key: %v, want a usage error naming %s", err, cli.KeyEnv)
	}
	if _, err := os.Stat(short); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("short key: the file was written (%v)", err)
	}

	os.Unsetenv(cli.KeyEnv) // t.Setenv restores it after the test
	if err := cli.SaveCheckpoint(plain, c); err != nil {
		t.Fatal(err)
	}
	if _, signed, err := checkpoint.LoadUnverified(plain); err != nil || signed {
		t.Errorf("saved without %s: signed %v, %v; want an unsigned checkpoint", cli.KeyEnv, signed, err)
	}
}
