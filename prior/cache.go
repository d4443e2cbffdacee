package prior

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/internal/filelock"
	"github.com/privtrain/privtrain/internal/safeio"
)

// CacheEnv names the environment variable that gives the directory where whitening maps
// are kept between runs (CacheDir).
const CacheEnv = "PRIVTRAIN_PRIOR_CACHE"

// CacheDir is the directory of the map cache: $PRIVTRAIN_PRIOR_CACHE, else
// privtrain/prior under the user's cache directory ($XDG_CACHE_HOME, ~/.cache on Linux).
// The maps are computed from synthetic images only: they hold nothing private.
func CacheDir() (string, error) {
	if d := os.Getenv(CacheEnv); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("prior: no cache directory (%v): set %s", err, CacheEnv)
	}
	return filepath.Join(d, "privtrain", "prior"), nil
}

// A map file is
//
//	"privtrain prior map v1\n" key "\n" dim "\n"   (key: 64 hex digits, dim decimal)
//	dim² float32, little-endian, row-major
//	SHA-256 of everything before
//
// so its size follows from the key and dim, and a reader allocates nothing it has not
// checked.
const mapMagic = "privtrain prior map v1\n"

// mapHeader is the start of the file of the map of key with dim features.
func mapHeader(key string, dim int) []byte {
	return []byte(mapMagic + key + "\n" + strconv.Itoa(dim) + "\n")
}

// encodeMap is the file of M.
func encodeMap(key string, dim int, M []float32) []byte {
	b := mapHeader(key, dim)
	b = slices.Grow(b, 4*len(M)+sha256.Size)
	for _, v := range M {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// decodeMap is the map of key with dim features in file b, or an error saying what is
// wrong with it.
func decodeMap(b []byte, key string, dim int) ([]float32, error) {
	h := mapHeader(key, dim)
	want := len(h) + 4*dim*dim + sha256.Size
	if !bytes.HasPrefix(b, []byte(mapMagic)) {
		return nil, errors.New("not a privtrain prior map file")
	}
	if len(b) < len(h) || !bytes.Equal(b[:len(h)], h) {
		return nil, fmt.Errorf("written for another map (want key %s, %d features)", key, dim)
	}
	if len(b) != want {
		return nil, fmt.Errorf("%d bytes, want %d: truncated or padded", len(b), want)
	}
	body, sum := b[:want-sha256.Size], b[want-sha256.Size:]
	if s := sha256.Sum256(body); !bytes.Equal(s[:], sum) {
		return nil, errors.New("checksum mismatch: the file is corrupt")
	}
	M := make([]float32, dim*dim)
	for i := range M {
		v := math.Float32frombits(binary.LittleEndian.Uint32(body[len(h)+4*i:]))
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("entry %d is %v", i, v)
		}
		M[i] = v
	}
	return M, nil
}

// readMap reads the map of key from path, reading no more than its file may hold.
func readMap(path, key string, dim int) ([]float32, error) {
	f, err := safeio.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	limit := int64(len(mapHeader(key, dim)) + 4*dim*dim + sha256.Size)
	b, err := io.ReadAll(safeio.LimitReader(f, limit, path))
	if err != nil {
		return nil, err
	}
	return decodeMap(b, key, dim)
}

// CacheUse says where a map came from.
type CacheUse struct {
	// File is the map's cache file; empty when there is no cache directory.
	File string
	// Loaded is true when the map was read from File or from this process's memory,
	// false when it was computed.
	Loaded bool
	// Problem, if not empty, says why File was not used (corrupt, written for another
	// map) or could not be written; the map was computed either way.
	Problem string
}

var memo struct {
	sync.Mutex
	maps map[string][]float32
}

// Map returns the dim × dim map named key (64 hex digits: a SHA-256 of everything it
// depends on), from this process's memory, else from its file in dir, else from compute,
// whose result is then written to dir (created if needed) and kept in memory. dir ""
// keeps no file. A damaged file or one that cannot be written does not fail the call:
// use.Problem says what happened, and the map is computed. Calls are serialised by one
// lock, held while a map is computed (minutes): concurrent calls compute a map once, and
// others wait. The returned slice is shared with every later caller: read it, never
// write it.
func Map(dir, key string, dim int, compute func() ([]float32, error)) ([]float32, CacheUse, error) {
	return MapContext(context.Background(), dir, key, dim, nil, compute)
}

// StageWaiting is the stage a Progress is told, with done the holder's process id (0 if
// unknown), while MapContext waits for another process computing the same map.
const StageWaiting = "waiting"

// lockPoll is how often MapContext tries the lock of a map that another process computes.
var lockPoll = 500 * time.Millisecond

// MapContext is Map that also keeps two processes from computing the same map: the
// computation holds the lock of the map's file (File + ".lock", internal/filelock, with
// the holder's pid), and a process that finds it held tells progress (StageWaiting, the
// holder's pid) and waits — giving up with ctx's error once ctx is done — then loads the
// map the holder wrote (or computes it, if the holder wrote none). The kernel drops the
// lock of a process that dies, so a crash leaves no stale lock.
func MapContext(ctx context.Context, dir, key string, dim int, progress Progress, compute func() ([]float32, error)) ([]float32, CacheUse, error) {
	var use CacheUse
	if len(key) != 2*sha256.Size || !isHex(key) {
		return nil, use, fmt.Errorf("prior: map key %q: want 64 hex digits", key)
	}
	if dim <= 0 || dim > MaxDim {
		return nil, use, fmt.Errorf("prior: map of %d features: want 1 to %d", dim, MaxDim)
	}
	memo.Lock()
	defer memo.Unlock()
	if dir != "" {
		use.File = filepath.Join(dir, "whitening-"+key+".map")
	}
	if M, ok := memo.maps[key]; ok && len(M) == dim*dim {
		use.Loaded = true
		return M, use, nil
	}
	if M, ok := use.load(key, dim); ok {
		return M, use, nil
	}
	if use.File != "" && os.MkdirAll(dir, 0o755) == nil {
		lock, err := waitLock(ctx, use.File+".lock", progress)
		if err != nil && ctx.Err() != nil {
			return nil, use, err
		}
		if lock != nil { // else (a lock that cannot be taken): compute without one
			defer lock.Unlock()
			use.Problem = ""
			if M, ok := use.load(key, dim); ok { // written while this process waited
				return M, use, nil
			}
		}
	}
	M, err := compute()
	if err != nil {
		return nil, use, err
	}
	if len(M) != dim*dim {
		return nil, use, fmt.Errorf("prior: computed map has %d values, want %d", len(M), dim*dim)
	}
	remember(key, M)
	if use.File != "" {
		err := os.MkdirAll(dir, 0o755)
		if err == nil {
			err = atomicfile.Write(use.File, 0o644, func(w io.Writer) error {
				_, err := w.Write(encodeMap(key, dim, M))
				return err
			})
		}
		if err != nil {
			if use.Problem != "" {
				use.Problem += "; "
			}
			use.Problem += fmt.Sprintf("not cached: %v", err)
		}
	}
	return M, use, nil
}

// load reads the map from use.File, if any, remembering it; a damaged file is noted in
// use.Problem.
func (use *CacheUse) load(key string, dim int) ([]float32, bool) {
	if use.File == "" {
		return nil, false
	}
	M, err := readMap(use.File, key, dim)
	if err == nil {
		use.Loaded = true
		remember(key, M)
		return M, true
	}
	if !errors.Is(err, fs.ErrNotExist) {
		use.Problem = fmt.Sprintf("%s: %v; recomputed", use.File, err)
	}
	return nil, false
}

// waitLock takes the lock at path, telling progress whom it waits for while another
// process holds it, until ctx is done. A lock that cannot be taken for another reason is
// the error (with ctx not done).
func waitLock(ctx context.Context, path string, progress Progress) (*filelock.Lock, error) {
	told := false
	for {
		l, err := filelock.TryLock(path)
		var held *filelock.HeldError
		if !errors.As(err, &held) {
			return l, err
		}
		if !told && progress != nil {
			progress(StageWaiting, held.PID, 0)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// ForgetMaps drops the maps this process keeps in memory (63 MB each for 3,969
// features), so that a long-lived program frees them; the next Map reads its file.
func ForgetMaps() {
	memo.Lock()
	memo.maps = nil
	memo.Unlock()
}

// remember keeps M in memory; the memo holds a few maps at most (63 MB each).
func remember(key string, M []float32) {
	if memo.maps == nil || len(memo.maps) >= 4 {
		memo.maps = map[string][]float32{}
	}
	memo.maps[key] = M
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
