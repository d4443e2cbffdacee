package budget

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/atomicfile"
)

// Issue 40, item 1 (property): whatever a store held of a lineage, a resume that hands it
// the checkpoint's ledger leaves the store holding, per (q, z), at least the ledger's
// steps of that lineage, and imports no step it already held. Counted here by brute force
// over a step-by-step list of mechanisms, independent of the store's per-(q, z) counting.
func TestResumeImportsWhatIsMissing(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 1))
	mechs := []accountant.Segment{{Q: 1, Z: 6}, {Q: 1, Z: 3}, {Q: 0.5, Z: 6}}
	history := func(n int) Segments {
		var h Segments
		for range n {
			m := mechs[rng.IntN(len(mechs))]
			m.Steps = 1 + rng.IntN(3)
			h = append(h, m)
		}
		return h
	}
	count := func(segs Segments) map[[2]float64]int {
		c := map[[2]float64]int{}
		for _, g := range segs {
			for range g.Steps { // one step at a time
				c[[2]float64{g.Q, g.Z}]++
			}
		}
		return c
	}
	for trial := range 6 {
		s := openStore(t, nil)
		var storeHeld Segments  // what the store's entries of lineage L count
		for range rng.IntN(3) { // earlier runs of the lineage in this store
			run := testRun("a")
			run.Lineage = "L"
			h := history(1 + rng.IntN(3))
			if _, err := s.Reserve(testFP, run, SegmentSpend("rdp", h), 0); err != nil {
				t.Fatal(err)
			}
			storeHeld = append(storeHeld, h...)
		}
		inherited := SegmentSpend("rdp", history(1+rng.IntN(5)))
		run := testRun("a")
		run.Lineage, run.Parent, run.Inherited = "L", &Parent{Run: "L", Step: 1, Steps: inherited.Steps()}, &inherited
		if _, err := s.Reserve(testFP, run, SegmentSpend("rdp", history(1)), 0); err != nil {
			t.Fatal(err)
		}
		_, runs, err := s.Runs(testFP, 0)
		if err != nil {
			t.Fatal(err)
		}
		var imported Segments
		for _, r := range runs {
			if r.Import {
				imported = append(imported, r.Spend.Segments...)
			}
		}
		held, want, got := count(storeHeld), count(inherited.Segments), count(append(storeHeld, imported...))
		for k, n := range want {
			if got[k] < n {
				t.Errorf("trial %d: the store holds %d steps of %v of the lineage, the checkpoint's ledger %d", trial, got[k], k, n)
			}
			if extra := count(imported)[k]; extra > max(0, n-held[k]) {
				t.Errorf("trial %d: imported %d steps of %v; the store held %d of the ledger's %d", trial, extra, k, held[k], n)
			}
		}
	}
}

// Issue 40, item 8: a reservation whose append cannot be completed (the head cannot be
// written: a full or read-only store) fails, and leaves no unsettled run behind: the run
// never starts, so nothing ran, and the ledger is as it was.
func TestFailedReservationLeavesNothing(t *testing.T) {
	s := openStore(t, nil)
	fill(t, s)
	before := lines(t, s)
	atomicfile.BeforeRename = func(tmp string) { os.Remove(tmp) } // the head's rename fails
	_, err := s.Reserve(testFP, testRun("a"), gauss(fillZ, 5), 0)
	atomicfile.BeforeRename = nil
	if err == nil {
		t.Fatal("a reservation whose head could not be written succeeded")
	}
	ds, err := s.Datasets(0)
	if err != nil {
		t.Fatal(err)
	}
	if ds[0].Unsettled != 0 || ds[0].Runs != 2 || len(lines(t, s)) != len(before) {
		t.Errorf("after a failed reservation: %+v, %d lines; want the 2 settled runs and %d lines", ds[0], len(lines(t, s)), len(before))
	}
	// The store still works.
	r, err := s.Reserve(testFP, testRun("a"), gauss(fillZ, 5), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(gauss(fillZ, 5)); err != nil {
		t.Fatal(err)
	}
}

// hostileLedger writes data set testFP's ledger as one unkeyed import entry of n steps,
// each of its own (q, z), and its head: a 4 MB file for n = 100,000.
func hostileLedger(t *testing.T, s *Store, n int) {
	t.Helper()
	segs := make(Segments, n)
	for i := range segs {
		// z from 0.5 to 0.5·e^20, q over (0, 1]: no grid of 1 % merges them below the cap.
		segs[i] = accountant.Segment{Q: 1 / (1 + float64(i%1000)), Z: 0.5 * math.Exp(float64(i)*2e-4), Steps: 1}
	}
	e := entry{Version: entryVersion, Seq: 0, Prev: genesis(testFP), Kind: kindImport, Run: "x", Time: "2026-01-01T00:00:00Z", Delta: 1e-5, Spend: SegmentSpend("rdp", segs)}
	line, h, err := encodeEntry(&e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.ledgerPath(testFP), line, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.writeHead(testFP, 0, h, nil); err != nil {
		t.Fatal(err)
	}
}

// Issue 40, item 5: an unkeyed ledger of 100,000 distinct segments (4 MB), which took
// minutes of CPU under the store's lock to compose, is refused (its distinct mechanisms
// are counted before any is composed), with an error that names the file and the cap.
func TestHostileLedgerRefused(t *testing.T) {
	s := openStore(t, nil)
	hostileLedger(t, s, 100_000)
	_, err := s.Reserve(testFP, testRun("a"), gauss(fillZ, 1), 0)
	if !errors.Is(err, ErrTooComplex) || !strings.Contains(err.Error(), s.ledgerPath(testFP)) || !strings.Contains(err.Error(), fmt.Sprint(MaxMechanisms)) {
		t.Errorf("a ledger of 100,000 distinct (q, z): %v; want ErrTooComplex naming the file and the cap %d", err, MaxMechanisms)
	}
	if _, err := s.Datasets(0); !errors.Is(err, ErrTooComplex) {
		t.Errorf("listing it: %v", err)
	}
}

// Many distinct z in a narrow range (an ADP-SGD schedule: one z per step) are rounded,
// composed, and still bound ε from above, closely: q = 1 steps are Gaussian mechanisms,
// whose RDP adds in closed form (Σ α/(2 z_i²), Mironov 2017), converted at the same
// orders by Balle et al. 2020 (Theorem 21).
func TestManyMechanismsRounded(t *testing.T) {
	const n = 3000
	segs := make([]accountant.Segment, n)
	inv := 0.0
	for i := range segs {
		z := 20 + 20*float64(i)/n // 3,000 distinct z in [20, 40)
		segs[i] = accountant.Segment{Q: 1, Z: z, Steps: 1}
		inv += 1 / (z * z)
	}
	c, err := Compose([]Spend{SegmentSpend("rdp", segs)}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	exact := math.Inf(1)
	for _, a := range compositionOrders { // the closed form at the store's orders
		r := a * inv / 2
		exact = min(exact, r+math.Log((a-1)/a)-(math.Log(1e-5)+math.Log(a))/(a-1))
	}
	if c.Epsilon < exact || c.Epsilon > exact*1.005 {
		t.Errorf("ε = %v (%s); want at least the closed-form RDP bound %v and within 0.5 %% of it", c.Epsilon, c.Method, exact)
	}
}

// A ledger of many runs with distinct spends (written directly, chained as the store
// chains them) lists its runs in bounded time: each run's own ε is bounded by PLD for
// the first ownPLDLimit distinct spends only (tens of milliseconds each), by RDP after,
// and an identical spend is composed once. Before, every run took the PLD bound too
// (70–120 ms each measured here), about 3–4 minutes for these 2,000 runs.
func TestManyRunsListQuickly(t *testing.T) {
	s := openStore(t, nil)
	const n = 2000
	var ledger []byte
	prev := genesis(testFP)
	for i := range n {
		e := entry{Version: entryVersion, Seq: i, Prev: prev, Kind: kindImport, Run: fmt.Sprintf("r%d", i),
			Time: "2026-01-01T00:00:00Z", Delta: 1e-5, Spend: SegmentSpend("rdp", Segments{{Q: 0.01, Z: 1.1, Steps: 10 + i}})}
		line, h, err := encodeEntry(&e, nil)
		if err != nil {
			t.Fatal(err)
		}
		ledger, prev = append(ledger, line...), h
	}
	if err := os.WriteFile(s.ledgerPath(testFP), ledger, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.writeHead(testFP, n-1, prev, nil); err != nil {
		t.Fatal(err)
	}
	_, runs, err := s.Runs(testFP, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != n {
		t.Fatalf("%d runs listed, want %d", len(runs), n)
	}
	pld := 0
	for i, r := range runs {
		if r.Own.Method == "pld" {
			pld++
		}
		// Each run alone: its ε by RDP (the closed-form-checked accountant) bounds the
		// listed figure, whichever bound was used.
		want, err := composeSpends([]Spend{r.Spend}, 1e-5, false)
		if err != nil {
			t.Fatal(err)
		}
		if r.Own.Epsilon > want.Epsilon*(1+1e-12) {
			t.Errorf("run %d: own ε %v above its RDP bound %v", i, r.Own.Epsilon, want.Epsilon)
		}
	}
	if pld > ownPLDLimit {
		t.Errorf("%d runs bounded by PLD, at most %d expected", pld, ownPLDLimit)
	}
}
