// Package benchenv holds what the benchmark commands (bench/compare, bench/paths) share to
// time processes on a shared machine: the CPU's name and flags, the load average, the share
// of the CPUs that other processes took while a child ran, waiting for a quiet machine, a
// child's peak resident set, and medians with ranges.
package benchenv

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Measured runs cmd and returns its output and the share of the CPUs' time that other
// processes took while it ran (busy time from /proc/stat less the child's own CPU time; −1
// if unknown).
func Measured(cmd *exec.Cmd) ([]byte, float64, error) {
	b0, ok0 := busyTicks()
	t0 := time.Now()
	outb, err := cmd.Output()
	wall := time.Since(t0).Seconds()
	b1, ok1 := busyTicks()
	foreign := -1.0
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ok0 && ok1 && wall > 0 {
			own := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
			foreign = max(0, (b1-b0)/100-own) / (wall * float64(runtime.NumCPU()))
		}
	}
	return outb, foreign, err
}

// MaxRSS is the peak resident set of a finished child, in MB (getrusage's ru_maxrss), or
// NaN if unknown. Linux keeps the parent's peak before the exec in it: a small child of a
// large parent reports the parent's (PeakRSS in the child does not).
func MaxRSS(cmd *exec.Cmd) float64 {
	if cmd.ProcessState == nil {
		return math.NaN()
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return math.NaN()
	}
	return float64(ru.Maxrss) * 1024 / 1e6
}

// busyTicks is the CPUs' total non-idle time so far, in USER_HZ ticks (1/100 s).
func busyTicks() (float64, bool) {
	f, ok := statCPU()
	if !ok {
		return 0, false
	}
	var busy float64
	for i, x := range f {
		if i != 3 && i != 4 && i < 8 { // not idle or iowait; guest times are already in user
			busy += x
		}
	}
	return busy, true
}

// statCPU is /proc/stat's aggregate "cpu" line: user, nice, system, idle, iowait, …
func statCPU() ([]float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return nil, false
	}
	v := make([]float64, len(f)-1)
	for i, s := range f[1:] {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, false
		}
		v[i] = x
	}
	return v, true
}

// PeakRSS is this process's peak resident set in MB since its exec (VmHWM of
// /proc/self/status; NaN if unknown). Unlike getrusage's ru_maxrss, which a child keeps
// from its parent across fork and exec, it is the process's own.
func PeakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return math.NaN()
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err == nil {
				return kb * 1024 / 1e6
			}
		}
	}
	return math.NaN()
}

// ChildRSS runs cmd and returns its peak resident set in MB (getrusage's ru_maxrss) and
// the last line it printed.
func ChildRSS(cmd *exec.Cmd) (float64, string, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		return 0, "", fmt.Errorf("%w\n%s", err, stderr.Bytes())
	}
	rss := MaxRSS(cmd)
	if math.IsNaN(rss) {
		return 0, "", errors.New("no rusage")
	}
	lines := strings.Split(strings.TrimSpace(string(outb)), "\n")
	return rss, lines[len(lines)-1], nil
}

// RepoRoot is the root of the module the current directory is in.
func RepoRoot() (string, error) {
	outb, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(outb))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run from inside the privtrain module")
	}
	return filepath.Dir(mod), nil
}

// AwaitQuiet samples how busy the CPUs are (over one second, from /proc/stat) until it is
// below limit or maxWait has passed, and describes the last sample. With limit ≤ 0 it
// samples once.
func AwaitQuiet(limit float64, maxWait time.Duration) string {
	deadline := time.Now().Add(maxWait)
	for {
		b := cpuBusy(time.Second)
		if b < 0 {
			return "?"
		}
		if limit <= 0 || b < limit || time.Now().After(deadline) {
			return fmt.Sprintf("%.0f%% busy", 100*b)
		}
	}
}

// cpuBusy is the fraction of all CPUs' time spent outside idle over d (−1 if unknown).
func cpuBusy(d time.Duration) float64 {
	read := func() (idle, total float64, ok bool) {
		f, ok := statCPU()
		if !ok {
			return 0, 0, false
		}
		for i, x := range f {
			total += x
			if i == 3 || i == 4 { // idle, iowait
				idle += x
			}
		}
		return idle, total, true
	}
	i0, t0, ok0 := read()
	time.Sleep(d)
	i1, t1, ok1 := read()
	if !ok0 || !ok1 || t1 <= t0 {
		return -1
	}
	return 1 - (i1-i0)/(t1-t0)
}

// LoadAvg is /proc/loadavg's three load averages ("?" if unknown).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// CPUInfo is the CPU's name as /proc/cpuinfo gives it ("model name", with "cpu family" and
// "model" on x86; "?" if unknown), the flags of it that the kernels' paths care about
// (x86: avx2, fma, avx512*; arm64: asimd and friends), and the clock /proc/cpuinfo states
// in GHz (0 if none: arm64 states none).
func CPUInfo() (name string, flags []string, ghz float64) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?", nil, 0
	}
	info := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" && len(info) > 0 {
			break // the first processor only
		}
		k, v, ok := strings.Cut(l, ":")
		if ok {
			info[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	name = info["model name"]
	if name == "" {
		name = "?"
	}
	if fam, ok := info["cpu family"]; ok {
		name += fmt.Sprintf(" (family %s model %s)", fam, info["model"])
	}
	all := info["flags"] + " " + info["Features"]
	for _, f := range strings.Fields(all) {
		if f == "avx2" || f == "fma" || strings.HasPrefix(f, "avx512") || f == "asimd" || f == "asimdhp" || f == "sve" || f == "sve2" {
			flags = append(flags, f)
		}
	}
	if mhz, err := strconv.ParseFloat(info["cpu MHz"], 64); err == nil {
		ghz = mhz / 1000
	}
	return name, flags, ghz
}

// Spread is the median, minimum and maximum of v (NaN for none).
func Spread(v []float64) (med, lo, hi float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}
