package budget

import (
	"errors"
	"strings"
	"testing"
)

// privacy budget -migrate-to: a store directory copied into a database holds the same
// ledgers (same entries, heads and ε; a witness taken in the directory is valid in the
// database); a second migration copies nothing, one after more runs copies those; a data
// set the database holds with other entries is refused and left as it was; a directory
// that fails verification is refused before anything is written.
func TestMigrate(t *testing.T) {
	src := openStore(t, testKey)
	dst := pgStore(t, testKey)
	other := strings.Repeat("a", 64)
	fill(t, src)
	if ok, err := src.Seal(other); !ok || err != nil {
		t.Fatal(ok, err)
	}
	r, err := src.Reserve(other, testRun("b"), gauss(fillZ, 4), 0) // keyed, unsettled
	if err != nil {
		t.Fatal(err)
	}
	witness := r.Head()
	want, err := src.Datasets(0)
	if err != nil {
		t.Fatal(err)
	}
	got := migrate(t, src, dst, 4+2, 0)
	if len(got) != len(want) {
		t.Fatalf("migrated %d data sets, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.Fingerprint != w.Fingerprint || g.Head != w.Head || g.Steps != w.Steps || g.Runs != w.Runs || g.Unsettled != w.Unsettled || g.Epsilon != w.Epsilon || g.Keyed != w.Keyed {
			t.Errorf("data set %s: the database has %+v, the directory %+v", w.Fingerprint[:8], g, w)
		}
	}
	run := testRun("b")
	run.Witnesses = []Head{witness}
	if _, err := dst.Reserve(other, run, gauss(fillZ, 1), 0); err != nil {
		t.Errorf("a witness of the directory's ledger, in the database: %v", err)
	}
	migrate(t, src, dst, 0, 4+2) // again: nothing to copy (the database's extra run stays)
	if _, err := r.Commit(gauss(fillZ, 3)); err != nil {
		t.Fatal(err)
	}
	fill(t, src) // 4 more entries of testFP in the directory
	// other: the directory's commit differs from the database's reservation: refused.
	_, err = Migrate(src, dst)
	if err == nil || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), "entry 2 differs") {
		t.Fatalf("migrating a data set the database holds with other entries: %v", err)
	}
	if d, _, err := dst.Runs(other, 0); err != nil || d.Runs != 2 || d.Unsettled != 2 {
		t.Errorf("the refused data set in the database: %+v, %v; want its 2 runs as they were", d, err)
	}
	if n := len(lines(t, dst)); n != 8 { // testFP sorts first: extended before other was refused
		t.Errorf("testFP holds %d entries in the database, want the 8 of the directory", n)
	}
	// A directory that fails verification: nothing is written.
	third := strings.Repeat("b", 64)
	if _, err := src.Reserve(third, testRun("c"), gauss(fillZ, 1), 0); err != nil {
		t.Fatal(err)
	}
	setHead(t, src, testFP, nil)
	if _, err := Migrate(src, dst); !errors.Is(err, ErrTampered) {
		t.Errorf("migrating a directory that fails verification: %v", err)
	}
	if fps, err := dst.Fingerprints(); err != nil || len(fps) != 2 {
		t.Errorf("the database after a refused migration: %v, %v; want the 2 data sets it held", fps, err)
	}
}

// migrate migrates src into dst, checks how many entries were copied and held (all data
// sets together), and returns dst's data sets.
func migrate(t *testing.T, src, dst *Store, copied, held int) []Dataset {
	t.Helper()
	ms, err := Migrate(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	c, h := 0, 0
	for _, m := range ms {
		c, h = c+m.Copied, h+m.Held
	}
	if c != copied || h != held {
		t.Errorf("copied %d entries, %d held already; want %d and %d", c, h, copied, held)
	}
	ds, err := dst.Datasets(0)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}
