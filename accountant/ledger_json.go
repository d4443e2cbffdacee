package accountant

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
)

// ledgerFormatVersion is bumped whenever the JSON layout changes.
const ledgerFormatVersion = 1

// ledgerJSON is the serialised form of a Ledger. The running totals are
// stored, so that a loaded ledger continues bit-for-bit like the original
// (recomputing could differ in the last bits across platforms), but they are
// also recomputed from the history on load and a ledger whose stored totals
// disagree beyond float rounding is refused (ErrTotalsMismatch): the history
// is what every accountant reads, and totals that do not follow from it were
// altered. The checksum covers every other field and catches corruption that
// still parses; it is unkeyed, so it does not stop deliberate edits.
type ledgerJSON struct {
	Version    int           `json:"version"`
	Conversion string        `json:"conversion"`
	Orders     []float64     `json:"orders"`
	RDP        []jsonFloat   `json:"rdp"`
	Steps      int           `json:"steps"`
	History    []segmentJSON `json:"history"`
	Checksum   string        `json:"checksum"`
}

type segmentJSON struct {
	Q     float64 `json:"q"`
	Z     float64 `json:"z"`
	Steps int     `json:"steps"`
}

// jsonFloat is a float64 that may be +Inf (an order at which the RDP
// overflowed), written as the string "+Inf". Finite values use Go's shortest
// round-tripping decimal form, so they are restored exactly.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(f), 1) {
		return []byte(`"+Inf"`), nil
	}
	return json.Marshal(float64(f))
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if string(b) == `"+Inf"` {
		*f = jsonFloat(math.Inf(1))
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = jsonFloat(v)
	return nil
}

// MarshalJSON writes the ledger's orders, conversion, RDP totals and history.
// The receiver is a pointer: encoding/json calls it for a *Ledger, or for a
// Ledger field of a struct reached through a pointer; a Ledger field of a
// struct passed by value would encode as {}.
func (l *Ledger) MarshalJSON() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	if l.cfg.err != nil {
		return nil, l.cfg.err
	}
	out := ledgerJSON{
		Version:    ledgerFormatVersion,
		Conversion: l.cfg.conversion.String(),
		Orders:     l.cfg.orders,
		RDP:        make([]jsonFloat, len(l.sum.total)),
		Steps:      l.sum.steps,
		History:    make([]segmentJSON, len(l.history)),
	}
	for i, r := range l.sum.total {
		out.RDP[i] = jsonFloat(r)
	}
	for i, s := range l.history {
		out.History[i] = segmentJSON(s)
	}
	out.Checksum = out.checksum()
	return json.Marshal(out)
}

// UnmarshalJSON restores a ledger written by MarshalJSON, replacing l's
// contents (its orders, conversion, totals and history) but keeping the
// accountant that l was made with (WithAccountant), so that a checkpoint is
// read by whichever accountant the reader chose. Malformed or corrupt input
// returns an error wrapping ErrFormat and leaves l unchanged; stored totals
// that do not follow from the stored history also wrap ErrTotalsMismatch.
func (l *Ledger) UnmarshalJSON(data []byte) error {
	var in ledgerJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return fmt.Errorf("accountant: ledger JSON: %v: %w", err, ErrFormat)
	}
	if dec.More() {
		return fmt.Errorf("accountant: ledger JSON: trailing data: %w", ErrFormat)
	}
	cfg, total, history, err := in.validate()
	if err != nil {
		return fmt.Errorf("accountant: ledger JSON: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// The accountant is the reader's choice; the JSON holds the history.
	acct := l.cfg.acct
	l.cfg = cfg
	l.cfg.acct = acct
	l.sum = rdpSum{total: total, steps: in.Steps}
	l.history = history
	l.ready = true
	return nil
}

func (in *ledgerJSON) validate() (config, []float64, []Segment, error) {
	cfg, total, history, err := in.validateFormat()
	if err != nil {
		return config{}, nil, nil, fmt.Errorf("%v: %w", err, ErrFormat)
	}
	if err := checkTotals(cfg, total, history); err != nil {
		return config{}, nil, nil, err
	}
	return cfg, total, history, nil
}

// validateFormat checks everything but the totals' agreement with the history.
func (in *ledgerJSON) validateFormat() (config, []float64, []Segment, error) {
	if in.Version != ledgerFormatVersion {
		return config{}, nil, nil, fmt.Errorf("unsupported version %d (want %d)", in.Version, ledgerFormatVersion)
	}
	if want := in.checksum(); in.Checksum != want {
		return config{}, nil, nil, fmt.Errorf("checksum %q does not match the contents (%q)", in.Checksum, want)
	}
	conv, err := ParseConversion(in.Conversion)
	if err != nil {
		return config{}, nil, nil, err
	}
	orders, err := checkOrders(in.Orders)
	if err != nil {
		return config{}, nil, nil, err
	}
	if len(orders) != len(in.Orders) {
		return config{}, nil, nil, fmt.Errorf("orders not strictly increasing")
	}
	for i := range orders {
		if orders[i] != in.Orders[i] {
			return config{}, nil, nil, fmt.Errorf("orders not strictly increasing")
		}
	}
	if len(in.RDP) != len(orders) {
		return config{}, nil, nil, fmt.Errorf("%d RDP values for %d orders", len(in.RDP), len(orders))
	}
	total := make([]float64, len(in.RDP))
	for i, r := range in.RDP {
		if !(r >= 0) {
			return config{}, nil, nil, fmt.Errorf("RDP at order %v is %v, want ≥ 0", orders[i], float64(r))
		}
		total[i] = float64(r)
	}
	history := make([]Segment, len(in.History))
	steps := 0
	for i, s := range in.History {
		if err := checkMechanism(s.Q, s.Z); err != nil {
			return config{}, nil, nil, fmt.Errorf("history[%d]: %v", i, err)
		}
		if s.Steps < 1 || steps > math.MaxInt-s.Steps {
			return config{}, nil, nil, fmt.Errorf("history[%d]: bad step count %d", i, s.Steps)
		}
		steps += s.Steps
		history[i] = Segment(s)
	}
	if steps != in.Steps {
		return config{}, nil, nil, fmt.Errorf("history holds %d steps, header says %d", steps, in.Steps)
	}
	if steps == 0 {
		for _, r := range total {
			if r != 0 {
				return config{}, nil, nil, fmt.Errorf("non-zero RDP without recorded steps")
			}
		}
	}
	return config{orders: orders, conversion: conv}, total, history, nil
}

// totalsTolerance is the relative disagreement allowed between stored and
// recomputed RDP totals per unit of rounding: the stored totals are sums of
// per-call products in the order Record was called, the recomputed ones one
// product per segment, so they differ by a few ulps per addition.
const totalsTolerance = 8 * 0x1p-52

// checkTotals recomputes the RDP totals from history (one RDP evaluation per
// distinct (q, z)) and refuses stored totals that disagree beyond rounding.
func checkTotals(cfg config, total []float64, history []Segment) error {
	want := RDP{}.totals(cfg, history)
	n := 0
	for _, s := range history {
		n += s.Steps
	}
	tol := 1e-9 + totalsTolerance*float64(n+len(history))
	for i, got := range total {
		w := want[i]
		switch {
		case math.IsInf(w, 1) || math.IsInf(got, 1):
			if got == w {
				continue
			}
		case math.Abs(got-w) <= tol*w:
			continue
		}
		return fmt.Errorf("stored RDP %v at order %v, but the history's %d steps give %v: %w: %w", got, cfg.orders[i], n, w, ErrTotalsMismatch, ErrFormat)
	}
	return nil
}

// checksum is the CRC-32C, in hex, of the binary encoding of every field
// except the checksum itself.
func (in *ledgerJSON) checksum() string {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	var buf [8]byte
	putU := func(u uint64) {
		binary.LittleEndian.PutUint64(buf[:], u)
		h.Write(buf[:])
	}
	putF := func(f float64) { putU(math.Float64bits(f)) }
	putU(uint64(in.Version))
	putU(uint64(len(in.Conversion)))
	h.Write([]byte(in.Conversion))
	putU(uint64(len(in.Orders)))
	for _, a := range in.Orders {
		putF(a)
	}
	putU(uint64(len(in.RDP)))
	for _, r := range in.RDP {
		putF(float64(r))
	}
	putU(uint64(in.Steps))
	putU(uint64(len(in.History)))
	for _, s := range in.History {
		putF(s.Q)
		putF(s.Z)
		putU(uint64(s.Steps))
	}
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}
