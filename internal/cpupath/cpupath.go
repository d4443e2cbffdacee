// Package cpupath decides, once at start-up, which native kernels privtrain runs: the best
// path the CPU supports, or a lower one that the environment variable PRIVTRAIN_CPU forces
// (avx512, avx2 or generic on amd64; neon or generic on arm64), so that every path a CPU
// supports can be tested, pinned and benchmarked on one machine.
//
// Every package with native kernels (internal/gemm, layers) asks Current on each call; tests
// and benchmarks switch paths with Force. Paths differ in the order of their floating-point
// sums, so seeded training is reproducible bit for bit on one path, not across paths.
package cpupath

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// Path is a set of native kernels.
type Path uint32

const (
	// Generic is pure Go (and gonum's BLAS): every CPU runs it.
	Generic Path = iota
	// AVX2 is amd64 with AVX2 and FMA (256-bit vectors).
	AVX2
	// AVX512 is amd64 with AVX-512F and an OS that saves the ZMM and mask registers.
	AVX512
	// NEON is arm64's Advanced SIMD (ASIMD, 128-bit vectors), which every arm64 CPU has.
	NEON
)

// Env is the environment variable that forces a lower path.
const Env = "PRIVTRAIN_CPU"

var names = [...]string{Generic: "generic", AVX2: "avx2", AVX512: "avx512", NEON: "neon"}

func (p Path) String() string {
	if int(p) < len(names) {
		return names[p]
	}
	return fmt.Sprintf("Path(%d)", uint32(p))
}

// Parse reads a path's name (case-insensitive, surrounding spaces ignored).
func Parse(s string) (Path, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for p, n := range names {
		if s == n {
			return Path(p), nil
		}
	}
	return 0, fmt.Errorf("unknown CPU path %q (want one of %s)", s, strings.Join(names[:], ", "))
}

var (
	current  atomic.Uint32
	envError error
	// supported is the paths this CPU runs, best first; Generic is always last.
	supported = detect()
)

func init() {
	current.Store(uint32(supported[0]))
	if v, ok := os.LookupEnv(Env); ok && strings.TrimSpace(v) != "" {
		p, err := Parse(v)
		switch {
		case err != nil:
			envError = fmt.Errorf("%s=%s: %v", Env, v, err)
		case !Supports(p):
			envError = fmt.Errorf("%s=%s: this CPU cannot run the %s path (it supports %s)", Env, v, p, list())
		default:
			current.Store(uint32(p))
		}
	}
}

// Current is the path the kernels take now.
func Current() Path { return Path(current.Load()) }

// Supported lists the paths this CPU can run, best first; Generic is always last.
func Supported() []Path { return append([]Path(nil), supported...) }

// Supports reports whether this CPU can run path p.
func Supports(p Path) bool {
	for _, s := range supported {
		if s == p {
			return true
		}
	}
	return false
}

// EnvError is the error in PRIVTRAIN_CPU, or nil: an unknown name or a path the CPU cannot
// run. The kernels then take the best path; commands refuse to start with this error.
func EnvError() error { return envError }

// Force switches every kernel to path p and returns the function that switches back, for
// tests and benchmarks: call it before kernels run, never while they do. It panics when the
// CPU cannot run p, since a kernel of that path would fault.
func Force(p Path) (restore func()) {
	if !Supports(p) {
		panic(fmt.Sprintf("cpupath: this CPU cannot run the %s path (it supports %s)", p, list()))
	}
	old := current.Swap(uint32(p))
	return func() { current.Store(old) }
}

// Describe names the path for the commands' output: "avx2 (forced by PRIVTRAIN_CPU; the CPU
// supports avx512, avx2, generic)" or "avx512".
func Describe() string {
	p := Current()
	if p == supported[0] {
		return p.String()
	}
	return fmt.Sprintf("%s (forced; the CPU supports %s)", p, list())
}

func list() string {
	s := make([]string, len(supported))
	for i, p := range supported {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
