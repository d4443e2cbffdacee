package budget

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/privtrain/privtrain/internal/strictjson"
)

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
