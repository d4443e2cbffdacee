// The hash chain: a data set's ledger read and verified entry by entry (read, the head
// check, witnesses), an entry appended to it (append), and the ledger line and head
// record formats with their hashes.

package budget

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/strictjson"
)

// Head is a position in a data set's ledger: its entry Seq, whose hash is Hash, in the
// ledger whose first entry's hash is Ledger (which tells one store's ledger of the data
// set from another's: their first entries differ). A checkpoint records the head of its
// data set's ledger when it is written, as a witness that the ledger held that entry
// (Run.Witnesses); privacy budget prints each data set's head, so that it can be kept
// elsewhere and compared later.
type Head struct {
	Fingerprint string `json:"fingerprint"`
	Ledger      string `json:"ledger"`
	Seq         int    `json:"seq"`
	Hash        string `json:"hash"`
}

// check reports a head that is not well formed.
func (h Head) check() error {
	if !isHex64(h.Fingerprint) || !isHex64(h.Ledger) || !isHex64(h.Hash) || h.Seq < 0 {
		return fmt.Errorf("budget: a ledger head (fingerprint, ledger, hash: 64 hex digits each; seq ≥ 0) that is not well formed: %+v", h)
	}
	return nil
}

// RollbackError is a witness that the data set's ledger does not hold: the ledger was
// restored from an older copy, or cut, after the witness was taken.
type RollbackError struct {
	Witness Head
	Entries int // the entries the ledger holds
}

func (e *RollbackError) Error() string {
	w := e.Witness
	held := fmt.Sprintf("it holds %d entries", e.Entries)
	if w.Seq < e.Entries {
		held = fmt.Sprintf("its entry %d has another hash", w.Seq)
	}
	return fmt.Sprintf("budget store: data set %s: refused as a rollback: the resumed checkpoint recorded the data set's ledger at entry %d (hash %s…), which this ledger does not hold (%s): the ledger was restored from an older copy or cut after that checkpoint was written, and the spend of the runs it lost is unknown",
		w.Fingerprint, w.Seq, w.Hash[:12], held)
}

func (e *RollbackError) Unwrap() []error { return []error{ErrRollback, ErrTampered} }

// VerifyError says which data set and entry of a store fail verification, and why.
type VerifyError struct {
	Fingerprint string
	// Entry is the position (0-based) of the entry at fault, −1 for the head or the files.
	Entry  int
	Reason string
}

func (e *VerifyError) Error() string {
	if e.Entry < 0 {
		return fmt.Sprintf("budget store: data set %s: %s", e.Fingerprint, e.Reason)
	}
	return fmt.Sprintf("budget store: data set %s, entry %d (line %d): %s", e.Fingerprint, e.Entry, e.Entry+1, e.Reason)
}

func (e *VerifyError) Unwrap() error { return ErrTampered }

// ledger is one data set's verified entries.
type ledger struct {
	fp      string
	entries []entry
	lines   [][]byte // each entry's line as stored, without its newline
	hashes  []string
	torn    int64 // offset of a torn last line, −1 if none
	exists  bool  // the ledger file exists
	keyed   bool  // an entry is keyed: every later entry and the head must be
	headSeq int   // the entry the head names (−1: none, or no head)
	runs    []*runState
	byRun   map[string]*runState
}

// runState is one run's reservation (or import) and commit.
type runState struct {
	first  *entry
	commit *entry
}

func (r *runState) spend() Spend {
	if r.commit != nil {
		return r.commit.Spend
	}
	return r.first.Spend
}

// read reads and verifies the data set's ledger and head; callers hold the lock (tx).
func (s *Store) read(tx storage, fp string) (*ledger, error) {
	l := &ledger{fp: fp, torn: -1, headSeq: -1, byRun: map[string]*runState{}}
	bad := func(i int, format string, args ...any) error {
		return &VerifyError{Fingerprint: fp, Entry: i, Reason: fmt.Sprintf(format, args...)}
	}
	data, head, err := tx.load(fp)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		l.exists = true
	}
	prev := genesis(fp)
	for off := 0; off < len(data); {
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 { // a line without its newline: an append cut short by a crash
			l.torn = int64(off)
			break
		}
		i := len(l.entries)
		p, err := parseLine(data[off : off+nl])
		l.lines = append(l.lines, data[off:off+nl])
		off += nl + 1
		if err != nil {
			return nil, bad(i, "not an entry: %v", err)
		}
		e := p.e
		switch {
		case e.Seq != i:
			return nil, bad(i, "it says it is entry %d: entries were removed or reordered", e.Seq)
		case e.Prev != prev:
			return nil, bad(i, "it does not follow the entry before it (hash chain broken): an entry was edited, removed or reordered")
		case p.alg == algKeyed && s.key == nil:
			return nil, fmt.Errorf("%w (data set %s)", ErrKeyRequired, fp)
		case p.alg == algPlain && l.keyed:
			return nil, bad(i, "an unkeyed entry after keyed ones: forged without the key")
		case e.Kind == kindSeal && p.alg != algKeyed:
			return nil, bad(i, "an unkeyed seal entry: forged without the key")
		case !hmac.Equal([]byte(digest(p.alg, s.key, p.body)), []byte(p.hash)):
			if p.alg == algKeyed {
				return nil, bad(i, "its HMAC does not verify: edited, or written with another key")
			}
			return nil, bad(i, "its hash does not verify: edited")
		}
		switch e.Kind {
		case kindReserve, kindImport:
			if l.byRun[e.Run] != nil {
				return nil, bad(i, "run %s is recorded twice", e.Run)
			}
			r := &runState{first: &l.entriesAppend(e, p.hash)[i]}
			l.byRun[e.Run] = r
			l.runs = append(l.runs, r)
		case kindCommit:
			r := l.byRun[e.Run]
			if r == nil || r.first.Kind != kindReserve || r.commit != nil {
				return nil, bad(i, "a commit of run %s, which has no open reservation", e.Run)
			}
			r.commit = &l.entriesAppend(e, p.hash)[i]
		case kindSeal:
			l.entriesAppend(e, p.hash)
		}
		l.keyed = l.keyed || p.alg == algKeyed
		prev = p.hash
	}
	// Entries are appended to a slice that may move: re-point the runs at their entries.
	l.relink()
	if err := s.checkHead(l, head, tx.headName()); err != nil {
		return nil, err
	}
	// Refuse here, in bounded time, a ledger whose composition would cost minutes.
	var segs []accountant.Segment
	for _, it := range l.items() {
		segs = append(segs, it.spend.Segments...)
	}
	if _, err := mechanisms(segs); err != nil {
		return nil, fmt.Errorf("%w (data set %s: its ledger %s is hostile, or far beyond what privtrain's runs write; move it aside, with its head, to start the data set anew)", err, fp, tx.ledgerName(fp))
	}
	return l, nil
}

// entriesAppend appends e and its hash and returns the entries.
func (l *ledger) entriesAppend(e entry, hash string) []entry {
	l.entries = append(l.entries, e)
	l.hashes = append(l.hashes, hash)
	return l.entries
}

// relink points every run state at the entries of l.entries.
func (l *ledger) relink() {
	l.runs, l.byRun = l.runs[:0], map[string]*runState{}
	for i := range l.entries {
		e := &l.entries[i]
		switch e.Kind {
		case kindCommit:
			l.byRun[e.Run].commit = e
			continue
		case kindSeal:
			continue
		}
		r := &runState{first: e}
		l.byRun[e.Run] = r
		l.runs = append(l.runs, r)
	}
}

// head is the ledger's last entry as a Head (Seq −1 when it holds none).
func (l *ledger) head() Head {
	h := Head{Fingerprint: l.fp, Seq: len(l.entries) - 1, Hash: l.hashAt(len(l.entries) - 1)}
	if len(l.hashes) > 0 {
		h.Ledger = l.hashes[0]
	}
	return h
}

// checkWitness refuses a witness of this ledger that names an entry it does not hold.
func (l *ledger) checkWitness(w Head) error {
	if w.Fingerprint != l.fp || len(l.hashes) == 0 || l.hashes[0] != w.Ledger {
		return nil // another data set, or another store's ledger: nothing to compare
	}
	if w.Seq >= len(l.hashes) || l.hashes[w.Seq] != w.Hash {
		return &RollbackError{Witness: w, Entries: len(l.hashes)}
	}
	return nil
}

// hashAt is the hash of entry i (the genesis hash for i = −1).
func (l *ledger) hashAt(i int) string {
	if i < 0 {
		return genesis(l.fp)
	}
	return l.hashes[i]
}

// checkHead checks the head (data, as the file store writes it; nil: none) against the
// verified entries: it must name the last entry, or the one before it (a crash between
// the append and the head's update). name is what the store calls its head.
func (s *Store) checkHead(l *ledger, data []byte, name string) error {
	fp, k := l.fp, len(l.entries)
	if data == nil {
		if !l.exists {
			return nil
		}
		return &VerifyError{Fingerprint: fp, Entry: -1, Reason: name + " is missing (it is written with the ledger): removed"}
	}
	var h headRecord
	if err := strictjson.Unmarshal(data, &h); err != nil {
		return &VerifyError{Fingerprint: fp, Entry: -1, Reason: fmt.Sprintf("the head file is not valid: %v", err)}
	}
	switch {
	case h.Alg == algKeyed && s.key == nil:
		return fmt.Errorf("%w (data set %s)", ErrKeyRequired, fp)
	case h.Alg != algKeyed && h.Alg != algPlain:
		return &VerifyError{Fingerprint: fp, Entry: -1, Reason: fmt.Sprintf("the head file names the algorithm %q", h.Alg)}
	case h.Alg == algPlain && l.keyed:
		return &VerifyError{Fingerprint: fp, Entry: -1, Reason: "the head file is not keyed but entries are: forged without the key, or written by a run without it"}
	case !hmac.Equal([]byte(digest(h.Alg, s.key, headBody(fp, h.Seq, h.Hash))), []byte(h.Mac)):
		return &VerifyError{Fingerprint: fp, Entry: -1, Reason: "the head file's hash does not verify: edited, or written with another key"}
	case h.Seq > k-1:
		return &VerifyError{Fingerprint: fp, Entry: h.Seq, Reason: fmt.Sprintf("the head records entry %d but the ledger holds %d entries: the last entries were removed", h.Seq, k)}
	case h.Seq == k-1 && h.Hash == l.hashAt(k-1), h.Seq == k-2 && h.Hash == l.hashAt(k-2):
		l.headSeq = h.Seq
		return nil
	case h.Seq < k-2:
		return &VerifyError{Fingerprint: fp, Entry: h.Seq + 1, Reason: fmt.Sprintf("the head records entry %d but the ledger holds %d entries: entries were added without updating the head", h.Seq, k)}
	}
	return &VerifyError{Fingerprint: fp, Entry: h.Seq, Reason: "the head records another hash for this entry: entries were edited or replaced"}
}

// append writes e as the next entry of l and moves the head to it (tx.put). Callers hold
// the lock (tx) and have verified l.
func (s *Store) append(tx storage, l *ledger, e entry) error {
	// A sealed ledger's entries and head are keyed; an unsealed one's are not, whether
	// or not the store has a key (only Seal turns a ledger keyed).
	key := l.key(s)
	if e.Kind == kindSeal {
		key = s.key
	}
	e.Version, e.Seq, e.Prev = entryVersion, len(l.entries), l.hashAt(len(l.entries)-1)
	line, hash, err := encodeEntry(&e, key)
	if err != nil {
		return err
	}
	if err := tx.put(l, line, e.Seq, hash, key); err != nil {
		return err
	}
	l.appended(e, line, hash, key)
	return nil
}

// appended records in l the entry e, written as line (with its newline) whose hash is
// hash, keyed with key.
func (l *ledger) appended(e entry, line []byte, hash string, key []byte) {
	l.entriesAppend(e, hash)
	l.lines = append(l.lines, bytes.TrimSuffix(line, []byte("\n")))
	l.relink()
	l.keyed = l.keyed || key != nil
	l.headSeq = e.Seq
	l.exists = true
}

// key is the key of l's entries and head: the store's once l is sealed, else none.
func (l *ledger) key(s *Store) []byte {
	if l.keyed {
		return s.key
	}
	return nil
}

// An entry is one line of a data set's ledger file:
//
//	ALG:HASH JSON\n
//
// ALG is "sha256" or "hmac-sha256" (keyed with the store's key), HASH the hex digest of
// the JSON bytes exactly as written, and the JSON carries the hash of the previous line
// (prev; the first entry's prev is the data set's genesis hash, which binds the file to
// its fingerprint) and its own position (seq). Editing, removing or reordering a line
// breaks the hash or the chain of the lines after it; the head file catches the removal
// of the last lines.
type entry struct {
	Version int    `json:"v"`
	Seq     int    `json:"seq"`
	Prev    string `json:"prev"`
	// Kind is "reserve" (a run's planned spend, before its first step), "commit" (what
	// it spent, when it stopped: replaces its reservation), "import" (the steps of a
	// resumed checkpoint's ledger that the store did not hold) or "seal" (the data set's
	// ledger is keyed from this entry on: Store.Seal; no spend).
	Kind    string  `json:"kind"`
	Run     string  `json:"run"`
	Lineage string  `json:"lineage,omitempty"`
	Parent  *Parent `json:"parent,omitempty"`
	Tool    string  `json:"tool,omitempty"`
	Name    string  `json:"name,omitempty"`
	Command string  `json:"command,omitempty"`
	Time    string  `json:"time"`
	Delta   float64 `json:"delta,omitempty"`
	Spend   Spend   `json:"spend"`
}

const (
	kindReserve = "reserve"
	kindCommit  = "commit"
	kindImport  = "import"
	kindSeal    = "seal"

	algPlain = "sha256"
	algKeyed = "hmac-sha256"

	entryVersion = 1
	// maxLine bounds one entry's line: a spend of many segments (an ADP-SGD schedule
	// records one per step) stays far below it.
	maxLine = 64 << 20
)

// genesis is the prev of a data set's first entry.
func genesis(fp string) string {
	h := sha256.Sum256([]byte("privtrain-budget-v1\x00" + fp))
	return hex.EncodeToString(h[:])
}

// digest is the hash of body under alg: HMAC-SHA256 with key, or SHA-256.
func digest(alg string, key, body []byte) string {
	if alg == algKeyed {
		m := hmac.New(sha256.New, key)
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}

// encodeEntry returns e's line (with its newline) and its hash.
func encodeEntry(e *entry, key []byte) ([]byte, string, error) {
	if err := e.checkSpend(); err != nil {
		return nil, "", err
	}
	body, err := json.Marshal(e)
	if err != nil {
		return nil, "", fmt.Errorf("budget: encoding an entry: %w", err)
	}
	alg := algPlain
	if key != nil {
		alg = algKeyed
	}
	h := digest(alg, key, body)
	line := make([]byte, 0, len(alg)+len(h)+len(body)+3)
	line = append(line, alg...)
	line = append(line, ':')
	line = append(line, h...)
	line = append(line, ' ')
	line = append(line, body...)
	return append(line, '\n'), h, nil
}

// parsedLine is a line split into its parts, before any hash is checked.
type parsedLine struct {
	alg, hash string
	body      []byte
	e         entry
}

// parseLine splits one line (without its newline) and decodes its JSON strictly. It
// checks the form of every part, not the hash (verify does, with the key).
func parseLine(line []byte) (parsedLine, error) {
	var p parsedLine
	if len(line) > maxLine {
		return p, fmt.Errorf("a line of %d bytes (at most %d)", len(line), maxLine)
	}
	head, body, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return p, errors.New("no space between the hash and the entry")
	}
	alg, h, ok := bytes.Cut(head, []byte(":"))
	if !ok {
		return p, errors.New("no algorithm before the hash")
	}
	p.alg, p.hash, p.body = string(alg), string(h), body
	if p.alg != algPlain && p.alg != algKeyed {
		return p, fmt.Errorf("unknown hash algorithm %q", p.alg)
	}
	if !isHex64(p.hash) {
		return p, errors.New("the hash is not 64 hex digits")
	}
	if err := strictjson.Unmarshal(body, &p.e); err != nil {
		return p, fmt.Errorf("the entry is not valid JSON: %v", err)
	}
	e := &p.e
	if e.Version != entryVersion {
		return p, fmt.Errorf("entry version %d (this program reads %d)", e.Version, entryVersion)
	}
	if e.Seq < 0 || !isHex64(e.Prev) {
		return p, errors.New("a negative position or a previous hash that is not 64 hex digits")
	}
	switch e.Kind {
	case kindReserve, kindCommit, kindImport, kindSeal:
	default:
		return p, fmt.Errorf("unknown kind %q", e.Kind)
	}
	if e.Run == "" {
		return p, errors.New("no run id")
	}
	if _, err := time.Parse(time.RFC3339Nano, e.Time); err != nil {
		return p, fmt.Errorf("time %q: %v", e.Time, err)
	}
	if !(e.Delta >= 0 && e.Delta < 1) {
		return p, fmt.Errorf("δ = %v", e.Delta)
	}
	if e.Parent != nil && (e.Parent.Run == "" || e.Parent.Step < 0 || e.Parent.Steps < 0) {
		return p, errors.New("a parent without a run id or with a negative step")
	}
	if err := e.checkSpend(); err != nil {
		return p, err
	}
	return p, nil
}

// checkSpend validates the entry's spend: none for a seal, one valid form otherwise.
func (e *entry) checkSpend() error {
	if e.Kind == kindSeal {
		if !e.Spend.isZero() {
			return errors.New("budget: a seal entry with a spend")
		}
		return nil
	}
	return e.Spend.Validate()
}

func checkFingerprint(fp string) error {
	if !isHex64(fp) {
		return fmt.Errorf("budget: fingerprint %q: want 64 lowercase hex digits (a SHA-256)", fp)
	}
	return nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// headRecord is the head file: the position and hash of the last entry appended, under
// its own hash (keyed like the entries), written atomically after every append.
type headRecord struct {
	Seq  int    `json:"seq"` // −1: no entry yet
	Hash string `json:"hash"`
	Alg  string `json:"alg"`
	Mac  string `json:"mac"`
}

func headBody(fp string, seq int, hash string) []byte {
	return fmt.Appendf(nil, "privtrain-budget-head-v1\x00%s\x00%d\x00%s", fp, seq, hash)
}

func newHead(fp string, seq int, hash string, key []byte) headRecord {
	alg := algPlain
	if key != nil {
		alg = algKeyed
	}
	return headRecord{Seq: seq, Hash: hash, Alg: alg, Mac: digest(alg, key, headBody(fp, seq, hash))}
}
