package atomicfile

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/privtrain/privtrain/internal/privrand"
)

// processToken tells this process's temporary files from those of an earlier process
// that had the same pid (containers often start every run as the same pid).
var processToken = privrand.ID(4)

// live holds the temporary files that this process's Write calls are writing now.
var live sync.Map

// StaleAge is the age after which a temporary file of Write is considered abandoned
// even when its writer's liveness cannot be told (a pid that another process now uses,
// a file written before temporary names carried a pid, a system without signals):
// writing one file never takes that long.
const StaleAge = time.Hour

// stale reports whether name, a file in dir beside path base, is a temporary file that
// Write left behind for base and whose writer is certainly gone:
//   - the name is ".<base>.tmp-<pid>.<token>-<digits>" (this package's pattern) and
//     either pid is this process's with another token (an earlier process with the same
//     pid), or this process's own but not being written now (a Write that panicked), or
//     pid is another process that no longer exists (Unix: kill(pid, 0) fails with
//     ESRCH); or
//   - the name is ".<base>.tmp-<digits>" (the pattern before pids were recorded) or of
//     the first form with a writer that may be alive, and the file is older than
//     StaleAge.
//
// A temporary file of a live writer — this process's own (a concurrent Write of the
// same path) or another running process's — is never stale until StaleAge.
func stale(dir, base, name string, modTime time.Time) bool {
	rest, ok := strings.CutPrefix(name, "."+base+".tmp-")
	if !ok {
		return false
	}
	old := time.Since(modTime) > StaleAge
	id, random, ok := strings.Cut(rest, "-")
	if !ok {
		return allDigits(rest) && old // the earlier ".<base>.tmp-<random>"
	}
	pidText, token, ok := strings.Cut(id, ".")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 || !allDigits(pidText) || !allDigits(random) || !isToken(token) {
		return false
	}
	switch {
	case old:
		return true
	case pid == os.Getpid():
		if token != processToken {
			return true
		}
		_, writing := live.Load(filepath.Join(dir, name))
		return !writing
	default:
		return processGone(pid)
	}
}

// removeStale deletes the stale temporary files of base in dir, best effort: a file
// that cannot be removed (or a directory that cannot be listed) is left for next time.
func removeStale(dir, base string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := "." + base + ".tmp-"
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if stale(dir, base, e.Name(), info.ModTime()) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func isToken(s string) bool {
	if len(s) != 8 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}
