package accountant

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

// forgedLedger returns the JSON of an honest DP-SGD ledger (14,063 steps of
// the TF Privacy MNIST plan, recorded one by one) as a map for tampering.
func honestLedgerMap(t *testing.T) (map[string]any, *Ledger) {
	t.Helper()
	l := NewLedger()
	for range 14063 {
		if err := l.Record(256.0/60000, 1.1, 1); err != nil {
			t.Fatal(err)
		}
	}
	data, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m, l
}

// Issue 17: a ledger whose history or totals were rewritten, with the
// (unkeyed) checksum recomputed, must be refused; the honest one loads
// exactly.
func TestLedgerJSONForgedRefused(t *testing.T) {
	m, honest := honestLedgerMap(t)
	var ok Ledger
	if err := ok.UnmarshalJSON(resign(t, m)); err != nil {
		t.Fatalf("honest ledger refused: %v", err)
	}
	want, _ := honest.Epsilon(1e-5)
	if got, _ := ok.Epsilon(1e-5); got != want {
		t.Errorf("honest ledger loads with %+v, want %+v", got, want)
	}
	for name, f := range map[string]func(m map[string]any){
		"history z = 100": func(m map[string]any) { m["history"].([]any)[0].(map[string]any)["z"] = 100 },
		"totals zeroed": func(m map[string]any) {
			rdp := m["rdp"].([]any)
			for i := range rdp {
				rdp[i] = 0
			}
		},
		"totals halved": func(m map[string]any) {
			rdp := m["rdp"].([]any)
			for i := range rdp {
				rdp[i] = rdp[i].(float64) / 2
			}
		},
		"one total 1e-6 lower": func(m map[string]any) {
			rdp := m["rdp"].([]any)
			rdp[70] = rdp[70].(float64) * (1 - 1e-6)
		},
		"history q halved": func(m map[string]any) {
			s := m["history"].([]any)[0].(map[string]any)
			s["q"] = s["q"].(float64) / 2
		},
	} {
		m, _ := honestLedgerMap(t)
		f(m)
		var l Ledger
		err := l.UnmarshalJSON(resign(t, m))
		if !errors.Is(err, ErrTotalsMismatch) || !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrTotalsMismatch (and ErrFormat)", name, err)
		}
	}
}

// Ledgers recorded step by step with varying noise (an ADP-like schedule),
// and in uneven chunks, load: their totals differ from the recomputed ones
// only by rounding.
func TestLedgerJSONRecomputedTotalsAcceptHonest(t *testing.T) {
	l := NewLedger(WithOrders(OrdersUpTo(256)))
	for i := range 3000 {
		z := 0.7 * math.Pow(20+float64(i%500), 0.25)
		if err := l.Record(0.01, z, 1+i%3); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := json.Marshal(l)
	var c Ledger
	if err := c.UnmarshalJSON(data); err != nil {
		t.Fatalf("honest varying-noise ledger refused: %v", err)
	}
	a, _ := l.Epsilon(1e-5)
	b, _ := c.Epsilon(1e-5)
	if a != b {
		t.Errorf("round trip changed ε: %+v → %+v", a, b)
	}
}
