package traincmd

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// TestFeatureCacheFlag: -feature-cache DIR computes and stores the scattering features in
// the first run and loads them in the next, which trains to the same parameters as a run
// without the cache; a damaged file is named in a warning, recomputed and rewritten.
func TestFeatureCacheFlag(t *testing.T) {
	data := smallFashion(t, 40, 10)
	cache := filepath.Join(t.TempDir(), "features")
	tmp := t.TempDir()
	train := func(name string, extra ...string) (params []float64, stderr string) {
		t.Helper()
		ck := filepath.Join(tmp, name+".ckpt")
		args := append([]string{"-model", "scatter-linear", "-dataset", "fashion-mnist", "-data", data,
			"-batch", "20", "-epochs", "1", "-seed", "7", "-checkpoint", ck}, extra...)
		code, _, stderr := runCmd(t, context.Background(), args...)
		if code != exit.OK {
			t.Fatalf("%s: exit %d\n%s", name, code, stderr)
		}
		c, err := checkpoint.Load(ck)
		if err != nil {
			t.Fatal(err)
		}
		return c.Params, stderr
	}
	want, stderr := train("plain")
	if strings.Contains(stderr, "cache") {
		t.Errorf("without -feature-cache the progress mentions a cache:\n%s", stderr)
	}
	got, stderr := train("first", "-feature-cache", cache)
	if !strings.Contains(stderr, "training set computed, cached in "+cache+string(filepath.Separator)) || !strings.Contains(stderr, "test set computed, cached in") {
		t.Errorf("first run:\n%s", stderr)
	}
	if !slices.Equal(got, want) {
		t.Error("the run that filled the cache trained to other parameters")
	}
	files, err := filepath.Glob(filepath.Join(cache, "*.features"))
	if err != nil || len(files) != 2 {
		t.Fatalf("cache files %v, %v: want one for the training set and one for the test set", files, err)
	}
	got, stderr = train("second", "-feature-cache", cache)
	if !strings.Contains(stderr, "training set loaded from cache "+cache) || !strings.Contains(stderr, "test set loaded from cache") || strings.Contains(stderr, "warning") {
		t.Errorf("second run:\n%s", stderr)
	}
	if !slices.Equal(got, want) {
		t.Error("the run on cached features trained to other parameters")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 1
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, stderr = train("damaged", "-feature-cache", cache)
	if strings.Count(stderr, "warning: -feature-cache: ") != 2 || !strings.Contains(stderr, files[0]) || !strings.Contains(stderr, "checksum") {
		t.Errorf("damaged files:\n%s", stderr)
	}
	if !slices.Equal(got, want) {
		t.Error("the run after damaged cache files trained to other parameters")
	}
	if _, stderr = train("repaired", "-feature-cache", cache); strings.Count(stderr, "loaded from cache") != 2 {
		t.Errorf("after the rewrite:\n%s", stderr)
	}
	_, stdout, _ := runCmd(t, context.Background(), "-help")
	if !strings.Contains(stdout, "-feature-cache DIR") || !strings.Contains(stdout, "protect DIR as the data") {
		t.Error("-help does not describe -feature-cache")
	}
}

// TestFeatureCacheKeyed: with PRIVTRAIN_CHECKPOINT_KEY set, a cache file whose payload
// was edited and whose SHA-256 was recomputed, as anyone can, is refused, recomputed
// and rewritten; the run trains to the parameters of a run without a cache. Before, the
// edited features were loaded and trained on. A FIFO in a cache file's place is refused
// rather than waited on forever.
func TestFeatureCacheKeyed(t *testing.T) {
	t.Setenv(budget.StoreEnv, t.TempDir()) // keyed entries: a store of its own, so the unkeyed tests can read theirs
	t.Setenv(keyEnv, "0123456789abcdef-feature-cache")
	data := smallFashion(t, 40, 10)
	cache := filepath.Join(t.TempDir(), "features")
	tmp := t.TempDir()
	train := func(name string, extra ...string) (params []float64, stderr string) {
		t.Helper()
		ck := filepath.Join(tmp, name+".ckpt")
		args := append([]string{"-model", "scatter-linear", "-dataset", "fashion-mnist", "-data", data,
			"-batch", "20", "-epochs", "1", "-seed", "7", "-checkpoint", ck}, extra...)
		code, _, stderr := runCmd(t, context.Background(), args...)
		if code != exit.OK {
			t.Fatalf("%s: exit %d\n%s", name, code, stderr)
		}
		c, err := checkpoint.LoadWithKey(ck, []byte(os.Getenv(keyEnv)))
		if err != nil {
			t.Fatal(err)
		}
		return c.Params, stderr
	}
	want, _ := train("plain")
	train("first", "-feature-cache", cache)
	files, err := filepath.Glob(filepath.Join(cache, "*.features"))
	if err != nil || len(files) != 2 {
		t.Fatalf("cache files %v, %v: want two", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		body := b[:len(b)-sha256.Size]
		body[len(body)/2] ^= 0x40 // a middle example: the first and last are recomputed on load
		sum := sha256.Sum256(body)
		if err := os.WriteFile(f, append(body, sum[:]...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, stderr := train("edited", "-feature-cache", cache)
	if strings.Count(stderr, "warning: -feature-cache: ") != 2 || !strings.Contains(stderr, "MAC does not verify") {
		t.Errorf("edited files with recomputed SHA-256:\n%s", stderr)
	}
	if !slices.Equal(got, want) {
		t.Error("the run after edited cache files trained to other parameters")
	}
	if _, stderr = train("rewritten", "-feature-cache", cache); strings.Count(stderr, "loaded from cache") != 2 {
		t.Errorf("after the rewrite:\n%s", stderr)
	}

	// A FIFO where the training set's file was: refused, recomputed, and left alone (the
	// write of the recomputed features refuses to replace what is not a regular file).
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(files[0]); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan string, 1)
	go func() { _, stderr := train("fifo", "-feature-cache", cache); done <- stderr }()
	select {
	case stderr := <-done:
		if !strings.Contains(stderr, "not a regular file") || !strings.Contains(stderr, files[0]) {
			t.Errorf("FIFO in the cache:\n%s", stderr)
		}
		if st, err := os.Lstat(files[0]); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("the FIFO in the cache was replaced: %v, %v", st, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("training hangs on a FIFO in the feature cache")
	}
}
