package traincmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// lockArgs is a quick private run: logistic regression on the embedded sample, 8 steps
// an epoch.
var lockArgs = []string{"-model", "logreg", "-batch", "1000", "-noise", "1", "-seed", "1"}

// trainChild runs train with the arguments of $PRIVTRAIN_TRAIN_CHILD (JSON) in this
// process and exits with its status; with $PRIVTRAIN_TRAIN_HOLD set it prints
// "holding" after its first step and waits there until it is killed.
func trainChild() {
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv("PRIVTRAIN_TRAIN_CHILD")), &args); err != nil {
		os.Exit(99)
	}
	if os.Getenv("PRIVTRAIN_TRAIN_HOLD") != "" {
		stepHook = func(training.StepProgress) {
			fmt.Println("holding")
			for { // a sleeping timer, not select{}: the runtime calls a process with every goroutine blocked a deadlock
				time.Sleep(time.Hour)
			}
		}
	}
	os.Exit(run(context.Background(), args, os.Stdout, os.Stderr))
}

func childCommand(t *testing.T, hold bool, args ...string) *exec.Cmd {
	t.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointLockTwoProcesses$")
	cmd.Env = append(os.Environ(), "PRIVTRAIN_TRAIN_CHILD="+string(a))
	if hold {
		cmd.Env = append(cmd.Env, "PRIVTRAIN_TRAIN_HOLD=1")
	}
	return cmd
}

// Issue 22's concurrent resumes: `train -resume s -checkpoint s` started twice at once
// both ran and wrote s. Now the second process is refused (exit 2) before any work,
// naming the first one's pid; so is any other writer of s (a fresh run, a resume of
// another file to s); once the first is killed with SIGKILL, s is free again.
func TestCheckpointLockTwoProcesses(t *testing.T) {
	if os.Getenv("PRIVTRAIN_TRAIN_CHILD") != "" {
		trainChild()
	}
	dir := t.TempDir()
	s, other := filepath.Join(dir, "s.ckpt"), filepath.Join(dir, "other.ckpt")
	mustRun(t, append(lockArgs, "-epochs", "1", "-checkpoint", s)...)
	mustRun(t, append(lockArgs, "-epochs", "1", "-checkpoint", other)...)
	resume := []string{"-resume", s, "-checkpoint", s, "-epochs", "12", "-checkpoint-every", "1"}

	first := childCommand(t, true, resume...)
	out, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var firstErr bytes.Buffer
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "holding\n" {
		first.Process.Kill()
		first.Wait()
		t.Fatalf("first run: %q, %v; stderr %s", line, err, firstErr.String())
	}

	second := childCommand(t, false, resume...)
	var stderr bytes.Buffer
	second.Stderr = &stderr
	err = second.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exit.Usage {
		t.Errorf("second run: %v, want exit %d; stderr %s", err, exit.Usage, stderr.String())
	}
	pid := fmt.Sprintf("process %d", first.Process.Pid)
	if !strings.Contains(stderr.String(), pid) || !strings.Contains(stderr.String(), "another -checkpoint") {
		t.Errorf("second run's stderr %q does not name %s and what to do", stderr.String(), pid)
	}
	// Every other writer of s, here from this process (another open file of the lock).
	for _, args := range [][]string{
		append(lockArgs, "-epochs", "1", "-checkpoint", s, "-overwrite"),
		{"-resume", other, "-checkpoint", s, "-epochs", "2", "-overwrite"},
	} {
		code, _, stderr := runCmd(t, context.Background(), args...)
		if code != exit.Usage || !strings.Contains(stderr, pid) {
			t.Errorf("train %s while the first run holds %s: exit %d, %q", strings.Join(args, " "), s, code, stderr)
		}
	}

	if err := first.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	first.Wait()
	mustRun(t, "-resume", s, "-checkpoint", s, "-epochs", "2")
	c, err := checkpoint.Load(s)
	if err != nil {
		t.Fatal(err)
	}
	if c.Step != 16 {
		t.Errorf("after the killed run and a resume to 2 epochs: step %d, want 16", c.Step)
	}
}

// Issue 22: a fresh run silently overwrote another run's checkpoint (960 steps → 32).
// Now it is refused (exit 2, naming the run and its steps, the file untouched) unless
// -overwrite, which says what it replaces; the same holds for a resume of one run
// onto another's checkpoint and for a file that is not a checkpoint. An empty file,
// the resumed file itself and a new path are written as before.
func TestCheckpointNotOverwritten(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.ckpt"), filepath.Join(dir, "b.ckpt")
	mustRun(t, append(lockArgs, "-epochs", "2", "-checkpoint", a)...)
	mustRun(t, append(lockArgs, "-epochs", "1", "-checkpoint", b)...)
	ca, err := checkpoint.Load(a)
	if err != nil {
		t.Fatal(err)
	}

	code, _, stderr := runCmd(t, context.Background(), append(lockArgs, "-epochs", "1", "-checkpoint", a)...)
	if code != exit.Usage || !strings.Contains(stderr, ca.RunID) || !strings.Contains(stderr, "16 steps taken") || !strings.Contains(stderr, "-overwrite") {
		t.Errorf("fresh run onto run %s's checkpoint: exit %d, %q", ca.RunID, code, stderr)
	}
	if got, err := checkpoint.Load(a); err != nil || got.RunID != ca.RunID || got.Step != 16 {
		t.Errorf("refused run changed %s: %v, %v", a, got, err)
	}
	code, _, stderr = runCmd(t, context.Background(), "-resume", b, "-checkpoint", a, "-epochs", "2")
	if code != exit.Usage || !strings.Contains(stderr, "another run") || !strings.Contains(stderr, ca.RunID) {
		t.Errorf("resume of another run onto %s: exit %d, %q", a, code, stderr)
	}

	code, _, stderr = runCmd(t, context.Background(), append(lockArgs, "-epochs", "1", "-checkpoint", a, "-overwrite")...)
	if code != exit.OK || !strings.Contains(stderr, "replacing") || !strings.Contains(stderr, ca.RunID) {
		t.Errorf("-overwrite: exit %d, %q", code, stderr)
	}
	if got, err := checkpoint.Load(a); err != nil || got.RunID == ca.RunID || got.Step != 8 {
		t.Errorf("after -overwrite: %v, want a new run at step 8", err)
	}

	notCkpt := filepath.Join(dir, "notes.txt")
	os.WriteFile(notCkpt, []byte("my notes\n"), 0o644)
	code, _, stderr = runCmd(t, context.Background(), append(lockArgs, "-epochs", "1", "-checkpoint", notCkpt)...)
	if data, _ := os.ReadFile(notCkpt); code != exit.Usage || !strings.Contains(stderr, "not a readable checkpoint") || string(data) != "my notes\n" {
		t.Errorf("fresh run onto a text file: exit %d, %q; file now %q", code, stderr, data)
	}
	empty := filepath.Join(dir, "empty.ckpt")
	os.WriteFile(empty, nil, 0o644)
	mustRun(t, append(lockArgs, "-epochs", "1", "-checkpoint", empty)...)
	mustRun(t, "-resume", b, "-checkpoint", b, "-epochs", "2")
}

// Issue 22: a checkpoint written with PRIVTRAIN_CHECKPOINT_KEY set, resumed with the
// variable unset, loaded without any check and was rewritten without its MAC (exit 0).
// Now it is refused (exit 2, saying to set the variable); -allow-unsigned loads it with
// a warning, but a signed file is never replaced by an unsigned one.
func TestSignedCheckpointWithoutKey(t *testing.T) {
	dir := t.TempDir()
	s, u := filepath.Join(dir, "s.ckpt"), filepath.Join(dir, "u.ckpt")
	const key = "a key of at least sixteen bytes"
	keyedStore := t.TempDir() // budget stores: a keyed one cannot be read without the key
	t.Setenv(budget.StoreEnv, keyedStore)
	t.Setenv(keyEnv, key)
	mustRun(t, append(lockArgs, "-epochs", "1", "-checkpoint", s)...)
	os.Unsetenv(keyEnv) // t.Setenv restores it after the test
	t.Setenv(budget.StoreEnv, t.TempDir())

	stillSigned := func(what string) {
		t.Helper()
		if c, err := checkpoint.LoadWithKey(s, []byte(key)); err != nil || c.Step != 8 {
			t.Errorf("%s: %s no longer verifies at step 8: %v", what, s, err)
		}
	}
	code, _, stderr := runCmd(t, context.Background(), "-resume", s, "-checkpoint", s, "-epochs", "2")
	if code != exit.Usage || !strings.Contains(stderr, "signed") || !strings.Contains(stderr, keyEnv) || !strings.Contains(stderr, "-allow-unsigned") {
		t.Errorf("signed checkpoint resumed without the key: exit %d, %q", code, stderr)
	}
	stillSigned("refused resume")
	code, _, stderr = runCmd(t, context.Background(), "-resume", s, "-checkpoint", s, "-epochs", "2", "-allow-unsigned")
	if code != exit.Usage || !strings.Contains(stderr, "without a MAC") {
		t.Errorf("-allow-unsigned onto the signed file itself: exit %d, %q", code, stderr)
	}
	stillSigned("-allow-unsigned onto itself")
	code, _, stderr = runCmd(t, context.Background(), append(lockArgs, "-epochs", "1", "-checkpoint", s, "-overwrite")...)
	if code != exit.Usage || !strings.Contains(stderr, "signed") {
		t.Errorf("fresh run with -overwrite onto a signed file without the key: exit %d, %q", code, stderr)
	}
	stillSigned("-overwrite")

	code, _, stderr = runCmd(t, context.Background(), "-resume", s, "-checkpoint", u, "-epochs", "2", "-allow-unsigned")
	if code != exit.OK || !strings.Contains(stderr, "without checking") {
		t.Errorf("-allow-unsigned to another file: exit %d, %q", code, stderr)
	}
	if c, signed, err := checkpoint.LoadUnverified(u); err != nil || signed || c.Step != 16 {
		t.Errorf("%s: signed %v, %v; want an unsigned checkpoint at step 16", u, signed, err)
	}

	t.Setenv(keyEnv, "another key of sixteen bytes")
	code, _, stderr = runCmd(t, context.Background(), "-resume", s, "-epochs", "2", "-allow-unsigned")
	if code != exit.Usage || !strings.Contains(stderr, "does not verify") {
		t.Errorf("signed checkpoint under another key: exit %d, %q", code, stderr)
	}
	t.Setenv(keyEnv, key)
	t.Setenv(budget.StoreEnv, keyedStore)
	mustRun(t, "-resume", s, "-checkpoint", s, "-epochs", "2")
	if _, err := checkpoint.LoadWithKey(s, []byte(key)); err != nil {
		t.Errorf("resumed under the key: %v", err)
	}
}

// writeSaturatableCSV writes n rows of 3 features in 0..255 with labels "a", "b"
// alternating; with saturated, every feature is 255 and the labels are the same.
func writeSaturatableCSV(t *testing.T, path string, n int, saturated bool) {
	t.Helper()
	var b strings.Builder
	b.WriteString("f1,f2,f3,label\n")
	for i := range n {
		v := func(j int) int {
			if saturated {
				return 255
			}
			return (37*i + 91*j) % 256
		}
		fmt.Fprintf(&b, "%d,%d,%d,%s\n", v(1), v(2), v(3), []string{"a", "b"}[i%2])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue 22: the resume fingerprint covered sizes and labels only, so the same labels
// with every pixel set to 255 resumed as "the same data". Now the checkpoint records
// the content fingerprint and the resume is refused (exit 2). A checkpoint older than
// the content fingerprint still resumes, with a warning that the content cannot be
// checked.
func TestResumeRefusesOtherContent(t *testing.T) {
	dir := t.TempDir()
	data, ck := filepath.Join(dir, "d.csv"), filepath.Join(dir, "d.ckpt")
	writeSaturatableCSV(t, data, 200, false)
	mustRun(t, "-dataset", "csv:"+data, "-label", "label", "-scale", "0:255", "-batch", "40", "-noise", "1", "-epochs", "1", "-seed", "1", "-checkpoint", ck)
	c, err := checkpoint.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Dataset.Content) != 64 {
		t.Fatalf("checkpoint records content_sha256 %q", c.Dataset.Content)
	}
	writeSaturatableCSV(t, data, 200, true)
	code, _, stderr := runCmd(t, context.Background(), "-resume", ck, "-checkpoint", ck, "-epochs", "2")
	if code != exit.Usage || !strings.Contains(stderr, "content") {
		t.Errorf("resume on the same labels with every value 255: exit %d, %q", code, stderr)
	}

	// A checkpoint without content_sha256 resumes, with a warning, on its data. (Not on
	// the saturated file: the content-hash train/test split of the checkpoint's
	// test-split setting holds out other rows of it, which the labels' fingerprint refuses.)
	writeSaturatableCSV(t, data, 200, false)
	old := filepath.Join(dir, "old.ckpt")
	c.Dataset.Content = ""
	if err := checkpoint.Save(old, c); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCmd(t, context.Background(), "-resume", old, "-checkpoint", old, "-epochs", "2")
	if code != exit.OK || !strings.Contains(stderr, "no content fingerprint") {
		t.Errorf("resume of a checkpoint without content_sha256: exit %d, %q", code, stderr)
	}
	if got, err := checkpoint.Load(old); err != nil || len(got.Dataset.Content) != 64 {
		t.Errorf("the resumed old checkpoint, rewritten: %v, content %q", err, got.Dataset.Content)
	}
}
