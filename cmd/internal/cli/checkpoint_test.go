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
