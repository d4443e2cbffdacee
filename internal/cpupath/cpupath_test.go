package cpupath

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestParseNames(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Path
	}{{"generic", Generic}, {"AVX2", AVX2}, {" avx512 ", AVX512}, {"neon", NEON}} {
		p, err := Parse(c.in)
		if err != nil || p != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, p, err, c.want)
		}
		if p.String() != strings.ToLower(strings.TrimSpace(c.in)) {
			t.Errorf("%v.String() = %q", p, p.String())
		}
	}
	for _, bad := range []string{"", "sse", "avx-512", "avx2 avx512"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestSupportedByArchitecture(t *testing.T) {
	s := Supported()
	if s[len(s)-1] != Generic {
		t.Fatalf("Supported() = %v: Generic must be last", s)
	}
	for _, p := range s {
		switch runtime.GOARCH {
		case "amd64":
			if p == NEON {
				t.Errorf("amd64 claims %v", p)
			}
		case "arm64":
			if p == AVX2 || p == AVX512 {
				t.Errorf("arm64 claims %v", p)
			}
		}
	}
	if runtime.GOARCH == "arm64" && s[0] != NEON {
		t.Errorf("arm64: Supported() = %v, want neon first", s)
	}
	// AVX-512 implies the AVX2 path: a CPU with the first runs the second.
	if Supports(AVX512) && !Supports(AVX2) {
		t.Errorf("Supported() = %v: avx512 without avx2", s)
	}
}

func TestForceRestores(t *testing.T) {
	before := Current()
	for _, p := range Supported() {
		restore := Force(p)
		if Current() != p {
			t.Errorf("after Force(%v) Current() = %v", p, Current())
		}
		restore()
		if Current() != before {
			t.Errorf("restore left %v, want %v", Current(), before)
		}
	}
	unsupported := NEON
	if runtime.GOARCH == "arm64" {
		unsupported = AVX2
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("Force(%v) on %s did not panic", unsupported, runtime.GOARCH)
			}
		}()
		Force(unsupported)
	}()
}

// TestEnvironment runs this test binary again with PRIVTRAIN_CPU set: the child reports
// the path it starts on and the error, since both are decided once at start-up.
func TestEnvironment(t *testing.T) {
	if os.Getenv("CPUPATH_CHILD") != "" {
		msg := ""
		if err := EnvError(); err != nil {
			msg = err.Error()
		}
		os.Stdout.WriteString("path=" + Current().String() + " err=" + msg + "\n")
		return
	}
	run := func(v string) string {
		out, err := runChild(os.Args[0], "-test.run=^TestEnvironment$", "CPUPATH_CHILD=1", Env+"="+v)
		if err != nil {
			t.Fatalf("%s=%s: %v", Env, v, err)
		}
		return string(out)
	}
	best := Supported()[0]
	for _, p := range Supported() {
		if out := run(p.String()); !strings.Contains(out, "path="+p.String()+" err=\n") {
			t.Errorf("%s=%s: child says %q", Env, p, out)
		}
	}
	if out := run("turbo"); !strings.Contains(out, "path="+best.String()+" err="+Env+"=turbo: unknown CPU path") {
		t.Errorf("%s=turbo: child says %q", Env, out)
	}
	unsupported := "neon"
	if runtime.GOARCH == "arm64" {
		unsupported = "avx2"
	}
	if out := run(unsupported); !strings.Contains(out, "path="+best.String()+" err=") || !strings.Contains(out, "cannot run the "+unsupported+" path") {
		t.Errorf("%s=%s: child says %q", Env, unsupported, out)
	}
}

// runChild runs the test binary again with env added. Where the kernel cannot execute it
// (exec format error: a cross-built binary under qemu-user without binfmt_misc, as
// .ci/run's arm64 step runs it), it runs it through qemu-user's emulator for GOARCH.
func runChild(bin, arg string, env ...string) ([]byte, error) {
	cmd := exec.Command(bin, arg)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if errors.Is(err, syscall.ENOEXEC) {
		arch := map[string]string{"arm64": "aarch64", "amd64": "x86_64"}[runtime.GOARCH]
		emu, lerr := exec.LookPath("qemu-" + arch)
		if arch == "" || lerr != nil {
			return nil, fmt.Errorf("%w (and no qemu-%s to run it with)", err, arch)
		}
		cmd = exec.Command(emu, bin, arg)
		cmd.Env = append(os.Environ(), env...)
		out, err = cmd.Output()
	}
	return out, err
}
