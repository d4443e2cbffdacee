package accountant

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

// adpSchedule records steps with a different z each, as ADP-SGD does.
func adpSchedule(l *Ledger, from, to int) error {
	for t := from; t < to; t++ {
		if err := l.Record(256.0/60000, 0.8+1/math.Sqrt(float64(t+1)), 1); err != nil {
			return err
		}
	}
	return nil
}

// TestLedgerJSONResume: save → load → continue gives bit-for-bit the RDP and
// ε of an uninterrupted ledger.
func TestLedgerJSONResume(t *testing.T) {
	for _, opts := range [][]Option{nil, {WithConversion(Classic), WithOrders(OrdersUpTo(300))}} {
		first := func(l *Ledger) error {
			return errors.Join(l.Record(256.0/60000, 1.1, 1000), l.Record(0.01, 0.7, 1), adpSchedule(l, 0, 50))
		}
		second := func(l *Ledger) error {
			return errors.Join(l.Record(256.0/60000, 1.1, 10), adpSchedule(l, 50, 120), l.Record(1, 9, 3))
		}
		whole := NewLedger(opts...)
		if err := errors.Join(first(whole), second(whole)); err != nil {
			t.Fatal(err)
		}
		saved := NewLedger(opts...)
		if err := first(saved); err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(saved)
		if err != nil {
			t.Fatal(err)
		}
		var resumed Ledger
		if err := json.Unmarshal(data, &resumed); err != nil {
			t.Fatal(err)
		}
		again, err := json.Marshal(&resumed)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("save → load → save changed the bytes (%v)", err)
		}
		if err := second(&resumed); err != nil {
			t.Fatal(err)
		}
		rw, rr := whole.RDP(), resumed.RDP()
		for i := range rw {
			if math.Float64bits(rw[i]) != math.Float64bits(rr[i]) {
				t.Fatalf("order %v: resumed RDP %v != uninterrupted %v", whole.Orders()[i], rr[i], rw[i])
			}
		}
		sw, _ := whole.Epsilon(1e-5)
		sr, _ := resumed.Epsilon(1e-5)
		if sw != sr || whole.Steps() != resumed.Steps() || resumed.Conversion() != whole.Conversion() {
			t.Errorf("resumed %+v (%d steps), uninterrupted %+v (%d steps)", sr, resumed.Steps(), sw, whole.Steps())
		}
		if len(resumed.History()) != len(whole.History()) {
			t.Errorf("history: %d segments, want %d", len(resumed.History()), len(whole.History()))
		}
	}
}

// TestLedgerJSONInfinite: an order whose RDP overflows survives the trip.
func TestLedgerJSONInfinite(t *testing.T) {
	l := NewLedger(WithOrders([]float64{2, 3}))
	if err := errors.Join(l.Record(0.5, 1, 1), l.Record(1, 1e-160, 1)); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(l.RDP()[1], 1) {
		t.Fatalf("RDP = %v, want +Inf", l.RDP())
	}
	if s, _ := l.Epsilon(1e-5); !math.IsInf(s.Epsilon, 1) {
		t.Errorf("ε = %v, want +Inf", s.Epsilon)
	}
	data, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var back Ledger
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(back.RDP()[1], 1) || !math.IsInf(back.RDP()[0], 1) {
		t.Errorf("RDP after round trip: %v, want %v", back.RDP(), l.RDP())
	}
}

// validLedgerJSON returns a ledger's JSON as a generic map for tampering.
func validLedgerJSON(t *testing.T) map[string]any {
	t.Helper()
	l := NewLedger(WithOrders([]float64{1.5, 2, 8}))
	if err := errors.Join(l.Record(0.01, 1, 10), l.Record(0.02, 2, 5)); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// resign recomputes the checksum so that the semantic checks are reached.
func resign(t *testing.T, m map[string]any) []byte {
	t.Helper()
	data, _ := json.Marshal(m)
	var in ledgerJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return data // does not parse: the checksum is never reached
	}
	m["checksum"] = in.checksum()
	data, _ = json.Marshal(m)
	return data
}

func TestLedgerJSONCorrupt(t *testing.T) {
	good := validLedgerJSON(t)
	goodBytes, _ := json.Marshal(good)
	var ok Ledger
	if err := ok.UnmarshalJSON(goodBytes); err != nil {
		t.Fatalf("valid ledger rejected: %v", err)
	}
	raw := string(goodBytes)
	for name, data := range map[string][]byte{
		"empty":       nil,
		"truncated":   goodBytes[:len(goodBytes)/2],
		"not object":  []byte(`[1,2]`),
		"trailing":    append(append([]byte{}, goodBytes...), []byte(` {}`)...),
		"digit flip":  []byte(strings.Replace(raw, `"steps":15`, `"steps":16`, 1)),
		"bad sum":     []byte(strings.Replace(raw, `"checksum":"`, `"checksum":"0`, 1)),
		"extra field": []byte(strings.Replace(raw, `{`, `{"extra":1,`, 1)),
	} {
		var l Ledger
		if err := l.UnmarshalJSON(data); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
	tamper := map[string]func(m map[string]any){
		"version":          func(m map[string]any) { m["version"] = 99 },
		"conversion":       func(m map[string]any) { m["conversion"] = "renyi" },
		"order ≤ 1":        func(m map[string]any) { m["orders"] = []any{1, 2, 8} },
		"orders unsorted":  func(m map[string]any) { m["orders"] = []any{2, 1.5, 8} },
		"orders duplicate": func(m map[string]any) { m["orders"] = []any{1.5, 1.5, 8} },
		"rdp length":       func(m map[string]any) { m["rdp"] = []any{0.1, 0.2} },
		"rdp negative":     func(m map[string]any) { m["rdp"] = []any{0.1, -0.2, 0.3} },
		"rdp string":       func(m map[string]any) { m["rdp"] = []any{0.1, "NaN", 0.3} },
		"steps mismatch":   func(m map[string]any) { m["steps"] = 14 },
		"history q":        func(m map[string]any) { m["history"].([]any)[0].(map[string]any)["q"] = 1.5 },
		"history z":        func(m map[string]any) { m["history"].([]any)[0].(map[string]any)["z"] = 0 },
		"history steps":    func(m map[string]any) { m["history"].([]any)[0].(map[string]any)["steps"] = 0 },
		"no history":       func(m map[string]any) { m["history"] = []any{}; m["steps"] = 0 },
	}
	for name, f := range tamper {
		m := validLedgerJSON(t)
		f(m)
		var l Ledger
		if err := l.UnmarshalJSON(resign(t, m)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
	// A failed load leaves the ledger as it was.
	before, _ := ok.Epsilon(1e-5)
	if err := ok.UnmarshalJSON([]byte(`{}`)); err == nil {
		t.Fatal("empty object accepted")
	}
	if after, _ := ok.Epsilon(1e-5); after != before {
		t.Errorf("failed load changed the ledger: %+v → %+v", before, after)
	}
}

// FuzzLedgerUnmarshal: arbitrary input never panics; what loads is usable
// and survives another round trip unchanged.
func FuzzLedgerUnmarshal(f *testing.F) {
	l := NewLedger(WithOrders([]float64{1.5, 2, 8}))
	_ = l.Record(0.01, 1, 10)
	_ = l.Record(1, 3, 2)
	seed, _ := json.Marshal(l)
	f.Add(seed)
	empty, _ := json.Marshal(NewLedger())
	f.Add(empty)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"conversion":"balle","orders":[2],"rdp":["+Inf"],"steps":1,"history":[{"q":1,"z":1e-300,"steps":1}],"checksum":"0"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var l Ledger
		if err := l.UnmarshalJSON(data); err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			return
		}
		s, err := l.Epsilon(1e-5)
		if err != nil || math.IsNaN(s.Epsilon) || s.Epsilon < 0 {
			t.Fatalf("loaded ledger gives %+v, %v", s, err)
		}
		out, err := json.Marshal(&l)
		if err != nil {
			t.Fatal(err)
		}
		var again Ledger
		if err := again.UnmarshalJSON(out); err != nil {
			t.Fatalf("re-marshalled ledger rejected: %v", err)
		}
		if s2, _ := again.Epsilon(1e-5); s2 != s {
			t.Fatalf("round trip changed ε: %+v → %+v", s, s2)
		}
	})
}
