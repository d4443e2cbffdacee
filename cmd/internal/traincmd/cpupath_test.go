package traincmd

import (
	"bytes"
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/cpupath"
)

// runChildEnv runs the train command in a process of its own with PRIVTRAIN_CPU=path (the
// path is decided once at start-up, so only a new process sees the variable) and returns
// its exit status, stdout and stderr.
func runChildEnv(t *testing.T, path string, args ...string) (int, string, string) {
	t.Helper()
	cmd := child(t, "", args...)
	cmd.Env = append(cmd.Env, cpupath.Env+"="+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("train with %s=%s: %v", cpupath.Env, path, err)
	return 0, "", ""
}

// TestCPUPathReported forces the generic kernels with PRIVTRAIN_CPU, which every CPU runs,
// and expects train to name that path in -json (cpu_path, and cpu_path_forced unless the
// CPU has nothing better) and in its text time line; and every other path the CPU supports
// to be named as itself.
func TestCPUPathReported(t *testing.T) {
	args := []string{"-model", "logreg", "-batch", "2000", "-epochs", "1", "-noise", "1", "-seed", "1"}
	for _, p := range cpupath.Supported() {
		code, out, errOut := runChildEnv(t, p.String(), append(args, "-json")...)
		if code != exit.OK {
			t.Fatalf("%s=%s: exit %d\n%s", cpupath.Env, p, code, errOut)
		}
		s := decodeSummary(t, out)
		if s["cpu_path"] != p.String() {
			t.Errorf("%s=%s: cpu_path %v", cpupath.Env, p, s["cpu_path"])
		}
		forced := p != cpupath.Supported()[0]
		if got, _ := s["cpu_path_forced"].(bool); got != forced {
			t.Errorf("%s=%s: cpu_path_forced %v, want %v (the CPU supports %v)", cpupath.Env, p, s["cpu_path_forced"], forced, cpupath.Supported())
		}
	}
	code, out, errOut := runChildEnv(t, "generic", args...)
	if code != exit.OK {
		t.Fatalf("%s=generic: exit %d\n%s", cpupath.Env, code, errOut)
	}
	want := "CPU path generic\n"
	if len(cpupath.Supported()) > 1 {
		want = "CPU path generic (forced; the CPU supports "
	}
	var timeLine string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "time ") {
			timeLine = l + "\n"
		}
	}
	if !strings.Contains(timeLine, want) {
		t.Errorf("%s=generic: time line %q lacks %q", cpupath.Env, timeLine, want)
	}
}

// TestCPUPathRefused: an unknown path, and one of another architecture, make train exit 2
// (a usage error) before any work, with a message that names the variable, the value and
// why.
func TestCPUPathRefused(t *testing.T) {
	other := "neon"
	if runtime.GOARCH == "arm64" {
		other = "avx2"
	}
	for _, c := range []struct{ value, why string }{
		{"bogus", "unknown CPU path \"bogus\""},
		{other, "this CPU cannot run the " + other + " path"},
	} {
		code, out, errOut := runChildEnv(t, c.value, "-model", "logreg", "-epochs", "1", "-json")
		if code != exit.Usage {
			t.Errorf("%s=%s: exit %d, want %d\n%s", cpupath.Env, c.value, code, exit.Usage, errOut)
		}
		if out != "" {
			t.Errorf("%s=%s: wrote %q to stdout", cpupath.Env, c.value, out)
		}
		if want := "train: " + cpupath.Env + "=" + c.value + ": "; !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, c.why) {
			t.Errorf("%s=%s: stderr %q, want %q … %q", cpupath.Env, c.value, errOut, want, c.why)
		}
	}
}
