package budget

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/atomicfile"
)

const testFP = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var testKey = []byte("a test key of at least 16 bytes")

func openStore(t *testing.T, key []byte) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testRun(name string) Run {
	return Run{Tool: "test", Name: name, Command: "test " + name, Delta: 1e-5}
}

// fillZ is the noise of fill's runs: large, so that their PLD is quick to compose.
const fillZ = 40

// fill records two settled runs: 4 lines.
func fill(t *testing.T, s *Store) {
	t.Helper()
	for _, steps := range []int{10, 20} {
		r, err := s.Reserve(testFP, testRun("a"), gauss(fillZ, steps), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Commit(gauss(fillZ, steps/2)); err != nil {
			t.Fatal(err)
		}
	}
}

func lines(t *testing.T, s *Store) [][]byte {
	t.Helper()
	b, err := os.ReadFile(s.ledgerPath(testFP))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

func writeLines(t *testing.T, s *Store, ls [][]byte) {
	t.Helper()
	if err := os.WriteFile(s.ledgerPath(testFP), bytes.Join(ls, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A reservation counts its planned steps until its commit settles them: the data set's ε
// is the closed form of the steps that count.
func TestReserveCommitCounts(t *testing.T) {
	s := openStore(t, nil)
	r, err := s.Reserve(testFP, testRun("mnist"), gauss(6, 40), 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := gaussianRDPEpsilon(40, 6, 1e-5, nil); r.Before.Epsilon != 0 || math.Abs(r.After.Epsilon-want) > 1e-9*want {
		t.Errorf("before %v, after %v; want 0 and the RDP bound %v of 40 steps", r.Before, r.After, want)
	}
	ds, err := s.Datasets(0)
	if err != nil || len(ds) != 1 || ds[0].Steps != 40 || ds[0].Unsettled != 1 || ds[0].Name != "mnist" {
		t.Fatalf("after the reservation: %+v, %v; want 40 unsettled steps", ds, err)
	}
	total, err := r.Commit(gauss(6, 15))
	if err != nil {
		t.Fatal(err)
	}
	want := gaussianEpsilon(6/math.Sqrt(15), 1e-5)
	if total.Epsilon < want-1e-9 || total.Epsilon > want*1.002 {
		t.Errorf("settled ε = %v, want the exact ε of 15 steps %v", total.Epsilon, want)
	}
	if _, err := r.Commit(gauss(6, 15)); err == nil {
		t.Error("a second commit accepted")
	}
	d, runs, err := s.Runs(testFP[:8], 0)
	if err != nil || d.Steps != 15 || d.Unsettled != 0 || len(runs) != 1 || !runs[0].Settled || runs[0].Reserved.Steps() != 40 {
		t.Fatalf("runs: %+v %+v %v", d, runs, err)
	}
}

// -budget: a plan that would take the data set past the budget is refused and leaves no
// entry; one within it is accepted.
func TestReserveOverBudget(t *testing.T) {
	s := openStore(t, nil)
	fill(t, s) // 15 steps at z = fillZ
	limit := gaussianEpsilon(fillZ/math.Sqrt(15+20), 1e-5)
	_, err := s.Reserve(testFP, testRun("a"), gauss(fillZ, 22), limit)
	var ob *OverBudgetError
	if !errors.As(err, &ob) || !errors.Is(err, ErrOverBudget) {
		t.Fatalf("over the budget: %v", err)
	}
	if ob.After.Epsilon <= limit || ob.Before.Epsilon >= limit {
		t.Errorf("refusal says before %v, after %v for budget %v", ob.Before, ob.After, limit)
	}
	if n := len(lines(t, s)); n != 4 {
		t.Errorf("the refusal left %d lines, want 4", n)
	}
	// 33 steps are within the exact Gaussian ε of 35, which only the PLD bound sees (the
	// RDP bound of a Gaussian is above the exact ε): the reservation reports the bound
	// that admitted it, not the RDP one above the budget.
	r, err := s.Reserve(testFP, testRun("a"), gauss(fillZ, 18), limit)
	if err != nil {
		t.Fatalf("within the budget: %v", err)
	}
	if !(r.After.Epsilon <= limit) || !strings.Contains(r.After.Method, "pld") {
		t.Errorf("admitted within %v, but reports %+v", limit, r.After)
	}
}

// Every edit, removal (middle or last) or reordering of entries, and every change of the
// head, is detected and named.
func TestTamperDetected(t *testing.T) {
	// o is the position of fill's first entry: 1 in a sealed ledger (the seal is entry 0).
	cases := []struct {
		name   string
		tamper func(t *testing.T, s *Store, o int)
		entry  int // -1: the head
		reason string
	}{
		{"edit a number", func(t *testing.T, s *Store, o int) {
			ls := lines(t, s)
			if !bytes.Contains(ls[o+1], []byte(`"steps":5`)) {
				t.Fatalf("entry %d has no 5 steps: %s", o+1, ls[o+1])
			}
			ls[o+1] = bytes.Replace(ls[o+1], []byte(`"steps":5`), []byte(`"steps":4`), 1)
			writeLines(t, s, ls)
		}, 1, ""},
		{"remove a middle entry", func(t *testing.T, s *Store, o int) {
			ls := lines(t, s)
			writeLines(t, s, append(ls[:o+1:o+1], ls[o+2:]...))
		}, 1, ""},
		{"remove the last entry", func(t *testing.T, s *Store, o int) {
			ls := lines(t, s)
			writeLines(t, s, ls[:o+3])
		}, 3, ""},
		{"remove the last two entries", func(t *testing.T, s *Store, o int) {
			ls := lines(t, s)
			writeLines(t, s, ls[:o+2])
		}, 3, ""},
		{"cut the last entry's newline", func(t *testing.T, s *Store, o int) {
			ls := lines(t, s)
			ls[o+3] = ls[o+3][:len(ls[o+3])-1]
			writeLines(t, s, ls)
		}, 3, ""},
		{"reorder two entries", func(t *testing.T, s *Store, o int) {
			ls := lines(t, s)
			ls[o+1], ls[o+2] = ls[o+2], ls[o+1]
			writeLines(t, s, ls)
		}, 1, ""},
		{"remove every entry", func(t *testing.T, s *Store, o int) { writeLines(t, s, nil) }, 3, ""},
		{"delete the ledger", func(t *testing.T, s *Store, o int) { os.Remove(s.ledgerPath(testFP)) }, 3, ""},
		{"delete the head", func(t *testing.T, s *Store, o int) { os.Remove(s.headPath(testFP)) }, -1, "head file is missing"},
		{"edit the head", func(t *testing.T, s *Store, o int) {
			b, _ := os.ReadFile(s.headPath(testFP))
			seq := fmt.Sprintf(`"seq":%d`, o+3)
			os.WriteFile(s.headPath(testFP), bytes.Replace(b, []byte(seq), []byte(fmt.Sprintf(`"seq":%d`, o+2)), 1), 0o600)
		}, -1, "head"},
		{"copy another data set's ledger", func(t *testing.T, s *Store, o int) {
			other := strings.Repeat("f", 64)
			if _, err := s.Reserve(other, testRun("b"), gauss(6, 3), 0); err != nil {
				t.Fatal(err)
			}
			for _, ext := range []string{".ledger", ".head"} {
				b, _ := os.ReadFile(filepath.Join(s.dir, other+ext))
				os.WriteFile(filepath.Join(s.dir, testFP+ext), b, 0o600)
			}
		}, 0, "entry 0"},
	}
	for _, key := range [][]byte{nil, testKey} {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				s, o := openStore(t, key), 0
				if key != nil {
					s, o = sealedStore(t), 1
				}
				fill(t, s)
				if _, err := s.Datasets(0); err != nil {
					t.Fatalf("before tampering: %v", err)
				}
				c.tamper(t, s, o)
				_, err := s.Datasets(0)
				var ve *VerifyError
				if !errors.As(err, &ve) || !errors.Is(err, ErrTampered) {
					t.Fatalf("tampered store: %v, want a VerifyError", err)
				}
				want := c.reason
				if want == "" {
					want = fmt.Sprintf("entry %d", c.entry+o)
				}
				if !strings.Contains(err.Error(), testFP) || !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name the data set and %q", err, want)
				}
				if _, err := s.Reserve(testFP, testRun("a"), gauss(6, 1), 0); !errors.Is(err, ErrTampered) {
					t.Errorf("a reservation on the tampered store: %v", err)
				}
				if _, _, err := s.Runs(testFP, 0); !errors.Is(err, ErrTampered) {
					t.Errorf("runs of the tampered store: %v", err)
				}
			})
		}
	}
}

// sealedStore is a store with the test key whose data set testFP is sealed before its
// first run: all its entries are keyed, the seal being entry 0.
func sealedStore(t *testing.T) *Store {
	t.Helper()
	s := openStore(t, testKey)
	if ok, err := s.Seal(testFP); !ok || err != nil {
		t.Fatalf("seal: %v, %v", ok, err)
	}
	return s
}

// With a key, an entry forged without it (unkeyed, or keyed with another key) is
// detected, and so is a whole ledger rewritten without the key; without the key a keyed
// store cannot be read.
func TestKeyedForgery(t *testing.T) {
	forge := func(t *testing.T, s *Store, key []byte, from int) {
		// Re-chain the entries from position from on as an attacker with key would.
		ls := lines(t, s)
		l := &ledger{fp: testFP}
		var out [][]byte
		for i, line := range ls {
			p, err := parseLine(line[:len(line)-1])
			if err != nil {
				t.Fatal(err)
			}
			if i < from {
				out = append(out, line)
				l.hashes = append(l.hashes, p.hash)
				continue
			}
			e := p.e
			e.Seq, e.Prev = i, l.hashAt(i-1)
			if i == from {
				e.Spend = gauss(6, 1) // the forger lowers the count
			}
			b, h, err := encodeEntry(&e, key)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
			l.hashes = append(l.hashes, h)
		}
		writeLines(t, s, out)
		f := &Store{dir: s.dir, key: key}
		if err := f.writeHead(testFP, len(out)-1, l.hashes[len(out)-1], key); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		key  []byte
		from int
	}{{"unkeyed tail", nil, 2}, {"unkeyed last", nil, 3}, {"another key", []byte("another key, 16+ bytes long"), 1}} {
		t.Run(c.name, func(t *testing.T) {
			s := sealedStore(t)
			fill(t, s)
			forge(t, s, c.key, c.from+1)
			if _, err := s.Datasets(0); !errors.Is(err, ErrTampered) {
				t.Errorf("forged entries read with the key: %v", err)
			}
		})
	}
	// A whole ledger rewritten without the key (the seal dropped) reads as an unsealed
	// one: no stronger than deleting the data set's files, the documented limit.
	s := sealedStore(t)
	fill(t, s)
	ls := lines(t, s)
	writeLines(t, s, ls[1:])
	forge(t, s, nil, 0)
	if _, err := s.Datasets(0); err != nil {
		t.Errorf("an unkeyed ledger read with the key: %v", err)
	}
	// The same forgery of an unkeyed store is undetectable: the documented limit.
	s = openStore(t, nil)
	fill(t, s)
	forge(t, s, nil, 1)
	if _, err := s.Datasets(0); err != nil {
		t.Errorf("an unkeyed store rewritten consistently: %v (expected to pass: anyone who can write it can forge it)", err)
	}
	k := sealedStore(t)
	fill(t, k)
	plain, _ := Open(k.dir, nil)
	if _, err := plain.Datasets(0); !errors.Is(err, ErrKeyRequired) {
		t.Errorf("a keyed store read without the key: %v", err)
	}
}

// A torn last line (a crash in the middle of an append) is ignored, and cut by the next
// append; a head one entry behind (a crash between the append and the head's update) is
// accepted, two behind is not.
func TestCrashStates(t *testing.T) {
	s := sealedStore(t)
	fill(t, s)
	before, err := s.Datasets(0)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(s.ledgerPath(testFP), os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte(`hmac-sha256:0123 {"v":1,"seq":5,"pr`))
	f.Close()
	after, err := s.Datasets(0)
	if err != nil || after[0].Epsilon != before[0].Epsilon || after[0].Runs != before[0].Runs {
		t.Fatalf("with a torn last line: %+v, %v; want %+v", after, err, before)
	}
	r, err := s.Reserve(testFP, testRun("a"), gauss(6, 3), 0)
	if err != nil {
		t.Fatal(err)
	}
	if ls := lines(t, s); len(ls) != 6 {
		t.Errorf("after the repair: %d lines, want 6 (the seal, 4 lines of fill, this reservation)", len(ls))
	}
	// Head one behind: restore the head from before the commit.
	head, _ := os.ReadFile(s.headPath(testFP))
	if _, err := r.Commit(gauss(6, 2)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(s.headPath(testFP), head, 0o600)
	if _, err := s.Datasets(0); err != nil {
		t.Errorf("head one entry behind: %v", err)
	}
	// The next append brings a stale head up to date first, so that a second crash
	// between an append and the head's update leaves it one entry behind, not two.
	r2, err := s.Reserve(testFP, testRun("a"), gauss(6, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	pre, _ := os.ReadFile(s.headPath(testFP))
	if _, err := r2.Commit(gauss(6, 1)); err != nil {
		t.Fatal(err)
	}
	post, _ := os.ReadFile(s.headPath(testFP))
	os.WriteFile(s.headPath(testFP), pre, 0o600) // a crash after the commit's append
	writes := 0
	atomicfile.BeforeRename = func(string) { writes++ }
	_, err = s.Reserve(testFP, testRun("a"), gauss(6, 1), 0)
	atomicfile.BeforeRename = nil
	if err != nil {
		t.Fatal(err)
	}
	if writes != 2 {
		t.Errorf("the head was written %d times by an append after a crash, want 2 (brought up to date, then after the append)", writes)
	}
	os.WriteFile(s.headPath(testFP), post, 0o600) // a crash after this append, before its head
	if _, err := s.Datasets(0); err != nil {
		t.Errorf("two crashes between an append and the head, one append apart: %v", err)
	}
	if _, err := s.Reserve(testFP, testRun("a"), gauss(6, 3), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(testFP, testRun("a"), gauss(6, 3), 0); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(s.headPath(testFP), head, 0o600) // now two behind
	if _, err := s.Datasets(0); !errors.Is(err, ErrTampered) {
		t.Errorf("head two entries behind: %v", err)
	}
}

// A resume from a checkpoint whose lineage the store has not seen imports the
// checkpoint's ledger once; two resumes of it both count their new steps.
func TestImportAndFork(t *testing.T) {
	s := openStore(t, nil)
	inherited := gauss(6, 10)
	resume := func() {
		run := testRun("a")
		run.Lineage = "L1"
		run.Parent = &Parent{Run: "L1", Step: 10, Steps: 10}
		run.Inherited = &inherited
		r, err := s.Reserve(testFP, run, gauss(6, 5), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Commit(gauss(6, 5)); err != nil {
			t.Fatal(err)
		}
	}
	resume()
	resume()
	d, runs, err := s.Runs(testFP, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || !runs[0].Import || runs[1].Import || runs[2].Import || d.Steps != 20 {
		t.Fatalf("runs %+v, steps %d: want one import of 10 steps and two runs of 5", runs, d.Steps)
	}
	lineage := gaussianEpsilon(6/math.Sqrt(15), 1e-5) // each lineage: 10 + 5 steps
	if !(d.Epsilon > lineage) || d.Epsilon < gaussianEpsilon(6/math.Sqrt(20), 1e-5)-1e-9 {
		t.Errorf("data set ε = %v, want above each lineage's %v and the exact ε of 20 steps", d.Epsilon, lineage)
	}
}

func TestOpenRefuses(t *testing.T) {
	s := openStore(t, nil)
	if _, err := s.Reserve("abc", testRun("a"), gauss(1, 1), 0); err == nil {
		t.Error("a fingerprint of 3 characters accepted")
	}
	if _, err := s.Reserve(testFP, Run{Delta: 0}, gauss(1, 1), 0); err == nil {
		t.Error("a segment spend without δ accepted")
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	if _, err := Open(file, nil); err == nil {
		t.Error("a file opened as a store")
	}
	if _, _, err := s.Runs("", 0); err == nil {
		t.Error("runs of no fingerprint")
	}
}

// Non-private runs and (ε, δ) runs are stored and composed.
func TestOtherForms(t *testing.T) {
	s := openStore(t, nil)
	if _, err := s.Reserve(testFP, Run{Delta: 1e-6}, Spend{Approx: &Approx{Epsilon: 1, Delta: 1e-6}}, 0); err != nil {
		t.Fatal(err)
	}
	d, err := s.Datasets(0)
	if err != nil || d[0].Epsilon != 1 || d[0].Delta != 1e-6 {
		t.Fatalf("%+v %v", d, err)
	}
	if _, err := s.Reserve(testFP, Run{}, Spend{Unbounded: true}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(testFP, testRun("a"), SegmentSpend("rdp", []accountant.Segment{{Q: 0.1, Z: 1, Steps: 3}}), 100); !errors.Is(err, ErrOverBudget) {
		t.Errorf("a budget after a non-private run: %v", err)
	}
	d, err = s.Datasets(0)
	if err != nil || !math.IsInf(d[0].Epsilon, 1) {
		t.Fatalf("%+v %v", d, err)
	}
}

// The store's directory: the flag, else $PRIVTRAIN_BUDGET_STORE, else
// $XDG_DATA_HOME/privtrain/budget (absolute only), else ~/.local/share/privtrain/budget.
func TestResolveDir(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	t.Setenv("XDG_DATA_HOME", "/data")
	t.Setenv(StoreEnv, "/env")
	for _, c := range []struct{ flag, env, xdg, want string }{
		{"/flag", "/env", "/data", "/flag"},
		{"", "/env", "/data", "/env"},
		{"", "", "/data", "/data/privtrain/budget"},
		{"", "", "relative", "/home/u/.local/share/privtrain/budget"},
		{"", "", "", "/home/u/.local/share/privtrain/budget"},
	} {
		os.Setenv(StoreEnv, c.env)
		os.Setenv("XDG_DATA_HOME", c.xdg)
		if got, err := ResolveDir(c.flag); err != nil || got != c.want {
			t.Errorf("flag %q, env %q, XDG %q: %q, %v; want %q", c.flag, c.env, c.xdg, got, err, c.want)
		}
	}
}
