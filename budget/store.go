package budget

import (
	"bytes"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/internal/filelock"
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/internal/strictjson"
)

var (
	// ErrOverBudget reports a reservation refused because the data set's spend with the
	// planned run would pass the budget (an *OverBudgetError).
	ErrOverBudget = errors.New("budget: over budget")
	// ErrTampered reports a store that fails verification (a *VerifyError): an entry
	// edited, removed, reordered or forged, or a head that does not match the ledger.
	ErrTampered = errors.New("budget: the store fails verification")
	// ErrKeyRequired reports a store whose entries are keyed, read without the key.
	ErrKeyRequired = errors.New("budget: the store is keyed (HMAC-SHA256): open it with its key")
	// ErrRollback reports a reservation refused because a witness (a resumed checkpoint's
	// record of the ledger) names an entry that the data set's ledger does not hold: the
	// ledger was rolled back (a *RollbackError, which matches ErrTampered too).
	ErrRollback = errors.New("budget: the ledger was rolled back")
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

// OverBudgetError is a refused reservation: the data set's spend before the run and with
// its plan, against the budget.
type OverBudgetError struct {
	Fingerprint, Name string
	Budget            float64
	Before, After     Composition
}

func (e *OverBudgetError) Error() string {
	return fmt.Sprintf("budget: data set %s (%s) has spent ε = %.4g at δ = %g; with this run's plan it would spend ε = %.4g (%s), above the budget ε = %g",
		short(e.Fingerprint), e.Name, e.Before.Epsilon, e.Before.Delta, e.After.Epsilon, e.After.Method, e.Budget)
}

func (e *OverBudgetError) Unwrap() error { return ErrOverBudget }

// short abbreviates a fingerprint for messages (the first 12 hex digits).
func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}

// Store is a budget store: a directory holding, for each data set, its ledger
// (FINGERPRINT.ledger, one entry per line) and head (FINGERPRINT.head), and the lock
// file that serialises every read and append across processes.
type Store struct {
	dir string // the directory, or for a database store its URL without the password
	key []byte
	b   backend // where the ledgers are kept: the directory (fileBackend) or PostgreSQL
}

// Open opens the store in dir, creating the directory (mode 0700) if needed. A non-nil
// key (at least one byte) is the store's HMAC-SHA256 key: it verifies keyed entries,
// keys the entries written to a sealed data set's ledger, and lets Seal seal one. A data
// set's ledger is keyed only from its seal entry on (Seal, an explicit step): until then
// its entries are written unkeyed whether or not a key is given, so that a run with the
// key does not lock out the runs without it. A keyed entry can be read only with the key,
// and no unkeyed entry may follow a keyed one.
func Open(dir string, key []byte) (*Store, error) {
	if dir == "" {
		return nil, errors.New("budget: no store directory")
	}
	if IsURL(dir) {
		return openPostgres(dir, key)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("budget: store %s: %w", dir, err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("budget: store %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("budget: store %s: not a directory", dir)
	}
	if len(key) == 0 {
		key = nil
	}
	s := &Store{dir: dir, key: bytes.Clone(key)}
	s.b = fileBackend{s}
	return s, nil
}

// StoreEnv names the environment variable that gives the store's directory when a
// command's -budget-store flag is not given.
const StoreEnv = "PRIVTRAIN_BUDGET_STORE"

// ResolveDir is the store directory of a command: dir (its -budget-store flag), else
// $PRIVTRAIN_BUDGET_STORE, else DefaultDir.
func ResolveDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if d := os.Getenv(StoreEnv); d != "" {
		return d, nil
	}
	return DefaultDir()
}

// DefaultDir is the per-user store: $XDG_DATA_HOME/privtrain/budget, or
// ~/.local/share/privtrain/budget when XDG_DATA_HOME is not set.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "privtrain", "budget"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("budget: no default store directory (%v): give one", err)
	}
	return filepath.Join(home, ".local", "share", "privtrain", "budget"), nil
}

// Dir returns the store's directory, or for a database store its URL without the
// password (what messages name).
func (s *Store) Dir() string { return s.dir }

// Close closes a database store's connection (a file store holds nothing open).
func (s *Store) Close() error { return s.b.close() }

// Keyed reports whether the store was opened with a key.
func (s *Store) Keyed() bool { return s.key != nil }

func (s *Store) ledgerPath(fp string) string { return filepath.Join(s.dir, fp+".ledger") }
func (s *Store) headPath(fp string) string   { return filepath.Join(s.dir, fp+".head") }

func (s *Store) lock() (*filelock.Lock, error) {
	l, err := filelock.Wait(filepath.Join(s.dir, "lock"))
	if err != nil {
		return nil, fmt.Errorf("budget: locking the store %s: %w", s.dir, err)
	}
	return l, nil
}

func checkFingerprint(fp string) error {
	if !isHex64(fp) {
		return fmt.Errorf("budget: fingerprint %q: want 64 lowercase hex digits (a SHA-256)", fp)
	}
	return nil
}

// Parent is where a run started from: the training run (lineage) of the checkpoint it
// resumed or forked from, that checkpoint's step on its branch and the steps its lineage
// had taken (rewinds included).
type Parent struct {
	Run   string `json:"run"`
	Step  int    `json:"step"`
	Steps int    `json:"steps"`
}

// Run describes a run for its reservation.
type Run struct {
	// ID identifies this entry of the store ("": a new random id). Every process gets its
	// own, also a resume, which keeps its checkpoint's Lineage.
	ID string
	// Lineage is the training run's id (training.Trainer.RunID), which its resumes keep.
	Lineage string
	Parent  *Parent
	// Tool is the command ("train", "audit", "erm"), Name the data flag as given, Command
	// the command line.
	Tool, Name, Command string
	// Time is when the run started (zero: now).
	Time time.Time
	// Delta is the run's δ: the data set's default δ is the smallest of its runs'.
	Delta float64
	// Inherited is what the lineage spent before this run (a resumed checkpoint's own
	// ledger). What of it the store does not hold for lineage Parent.Run (per (q, z), the
	// steps beyond those its entries of the lineage count) is recorded first as an import
	// entry of that lineage, so that a checkpoint from before the store, or whose lineage
	// ran in another store for a while, is counted in full.
	Inherited *Spend
	// Accountant is the accountant whose bound the run reports ("rdp": the RDP bound
	// alone; "pld": the smaller of the RDP and PLD bounds; "": the RDP bound for
	// Before and After, both for Commit), so that the run's budget lines agree with its
	// own ε. The listings always report the smaller of both.
	Accountant string
	// Witnesses are heads of the data set's ledger recorded by the checkpoints the run
	// resumes from (Head). Reserve refuses (a *RollbackError) a witness of this store's
	// ledger (same fingerprint, same first entry) whose entry the ledger does not hold; a
	// witness of another data set or of another store's ledger is not compared.
	Witnesses []Head
}

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

// readFile reads a store file whole, refusing one that is not a regular file (without
// blocking on a FIFO or following a link).
func readFile(path string) ([]byte, error) {
	f, err := safeio.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// truncateRegular cuts the regular file at path to n bytes; like every open of the
// store's files it follows no link and refuses a FIFO or a device (os.Truncate would
// follow a link at path and cut its target).
func truncateRegular(path string, n int64) error {
	f, err := safeio.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(n); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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

// put appends line (entry seq, whose hash is hash) to the ledger file: it first cuts a
// torn last line, creates the head before a new ledger, appends the whole line with one
// write and fsync, then updates the head.
func (s fileStorage) put(l *ledger, line []byte, seq int, hash string, key []byte) error {
	path := s.ledgerPath(l.fp)
	if l.torn >= 0 {
		if err := truncateRegular(path, l.torn); err != nil {
			return fmt.Errorf("budget: repairing the torn last line of %s: %w", path, err)
		}
		l.torn = -1
	}
	if !l.exists {
		if err := s.writeHead(l.fp, -1, genesis(l.fp), l.key(s.Store)); err != nil {
			return err
		}
	} else if last := len(l.entries) - 1; l.headSeq != last {
		// A crash between an append and the head's update left the head one entry
		// behind: bring it up to date first, or a second such crash would leave it two
		// behind, which reads as removed entries.
		if err := s.writeHead(l.fp, last, l.hashAt(last), l.key(s.Store)); err != nil {
			return err
		}
	}
	f, err := safeio.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("budget: %w", err)
	}
	size := fi.Size() // the ledger before this entry (a torn line was cut above)
	// undo cuts this entry off again when it cannot be completed (its line not written
	// whole and synced, or the head not updated: a full or read-only store): the caller
	// then fails, and a reservation that fails leaves no unsettled run behind, since its
	// run never starts. If the cut fails too, the entry stays: a head one entry behind is
	// read as a crash between the two writes, and the entry counts.
	undo := func(err error) error {
		if terr := truncateRegular(path, size); terr != nil {
			return fmt.Errorf("%w (and cutting the unfinished entry off failed: %v; it counts)", err, terr)
		}
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return undo(fmt.Errorf("budget: appending to %s: %w", path, err))
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return undo(fmt.Errorf("budget: syncing %s: %w", path, err))
	}
	if err := f.Close(); err != nil {
		return undo(fmt.Errorf("budget: %w", err))
	}
	if !l.exists {
		if err := syncDir(s.dir); err != nil {
			return undo(err)
		}
		l.exists = true
	}
	if err := s.writeHead(l.fp, seq, hash, key); err != nil && !s.headNames(l.fp, seq, hash) {
		// (A head renamed into place whose directory sync failed names the entry
		// already: then the entry stands.)
		return undo(err)
	}
	return nil
}

// headNames reports whether data set fp's head file names entry seq with hash.
func (s *Store) headNames(fp string, seq int, hash string) bool {
	data, err := readFile(s.headPath(fp))
	if err != nil {
		return false
	}
	var h headRecord
	return strictjson.Unmarshal(data, &h) == nil && h.Seq == seq && h.Hash == hash
}

// key is the key of l's entries and head: the store's once l is sealed, else none.
func (l *ledger) key(s *Store) []byte {
	if l.keyed {
		return s.key
	}
	return nil
}

func (s *Store) writeHead(fp string, seq int, hash string, key []byte) error {
	h := newHead(fp, seq, hash, key)
	err := atomicfile.Write(s.headPath(fp), 0o600, func(w io.Writer) error {
		return json.NewEncoder(w).Encode(h)
	})
	if err != nil {
		return fmt.Errorf("budget: writing the head of %s: %w", short(fp), err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("budget: syncing %s: %w", dir, err)
	}
	return nil
}

// item is a run's effective spend and δ.
type item struct {
	spend Spend
	delta float64
}

func (l *ledger) items() []item {
	out := make([]item, 0, len(l.runs))
	for _, r := range l.runs {
		out = append(out, item{r.spend(), r.first.Delta})
	}
	return out
}

// unheld is the part of a resumed checkpoint's ledger (inherited, of lineage run) that
// the ledger does not hold, nil when it holds all of it. For segments: per (q, z), the
// steps of inherited beyond those that the entries of the lineage count (settled at their
// commit, unsettled at their reservation, imports), so that the data set's steps of the
// lineage include every step of the checkpoint's ledger however the lineage travelled
// between stores: composition only grows with more steps, so the data set's ε is then
// at least the ε of that ledger. Other forms (a non-private lineage): all of inherited,
// when no entry of the lineage has that form.
func (l *ledger) unheld(run string, inherited Spend) *Spend {
	if !inherited.isSegments() {
		for _, r := range l.runs {
			if sp := r.spend(); r.first.Lineage == run && !sp.isSegments() {
				return nil
			}
		}
		return &inherited
	}
	held := map[[2]float64]int{}
	for _, r := range l.runs {
		if sp := r.spend(); r.first.Lineage == run && sp.isSegments() {
			for _, g := range sp.Segments {
				held[[2]float64{g.Q, g.Z}] += g.Steps
			}
		}
	}
	var missing Segments
	for _, g := range inherited.Segments {
		k := [2]float64{g.Q, g.Z}
		take := min(held[k], g.Steps)
		held[k] -= take
		if g.Steps > take {
			missing = append(missing, accountant.Segment{Q: g.Q, Z: g.Z, Steps: g.Steps - take})
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sp := SegmentSpend(inherited.Accountant, missing)
	return &sp
}

// defaultDelta is the δ at which a data set's spend is reported: the smallest δ of its
// runs whose spend is a curve or segments, plus the δ of its (ε, δ) runs.
func defaultDelta(items []item) float64 {
	d, approx := math.Inf(1), 0.0
	for _, it := range items {
		switch {
		case it.spend.Approx != nil:
			approx += it.spend.Approx.Delta
		case it.spend.Unbounded:
		case it.delta > 0:
			d = min(d, it.delta)
		}
	}
	if math.IsInf(d, 1) {
		d = 0
	}
	return d + approx
}

func compose(items []item, delta float64) (Composition, error) {
	return composeItems(items, delta, true)
}

// composeItems composes items at delta (0: their default δ), with or without the PLD bound.
func composeItems(items []item, delta float64, withPLD bool) (Composition, error) {
	if delta == 0 {
		delta = defaultDelta(items)
	}
	spends := make([]Spend, len(items))
	for i, it := range items {
		spends[i] = it.spend
	}
	return composeSpends(spends, delta, withPLD)
}

// Reservation is a run's reservation in the store, settled by Commit.
type Reservation struct {
	store       *Store
	fp, run     string
	delta       float64
	Fingerprint string
	// Before and After are the data set's spend before the run and with its planned
	// spend, at the data set's default δ, by the RDP bound alone (quick; the PLD bound,
	// often smaller, comes with Commit and the listings), except that After is the PLD
	// bound when only that bound kept the plan within Reserve's budgetEps.
	Before, After Composition
	committed     bool
	planned       Spend // the reserved spend
	head          Head  // the ledger after this run's latest entry
	rdpOnly       bool  // Commit reports the RDP bound alone (Run.Accountant "rdp")
}

// Head returns the data set's ledger head after the run's latest entry (its reservation,
// then its commit): what a checkpoint written by the run records as its witness.
func (r *Reservation) Head() Head { return r.head }

// ID returns the run's id in the store.
func (r *Reservation) ID() string { return r.run }

// Reserve records run's planned spend on data set fp before the run takes its first
// step, under the store's lock and fsynced. With budgetEps > 0 it refuses (an
// *OverBudgetError) a plan that would take the data set's ε, composed at its default δ,
// past budgetEps. A store that fails verification refuses every reservation.
func (s *Store) Reserve(fp string, run Run, planned Spend, budgetEps float64) (*Reservation, error) {
	if err := checkFingerprint(fp); err != nil {
		return nil, err
	}
	if err := planned.Validate(); err != nil {
		return nil, err
	}
	if !(run.Delta >= 0 && run.Delta < 1) || (run.Delta == 0 && (planned.isSegments() || planned.RDP != nil)) {
		return nil, fmt.Errorf("budget: run δ = %v: want δ in (0, 1)", run.Delta)
	}
	if run.Inherited != nil {
		if err := run.Inherited.Validate(); err != nil {
			return nil, fmt.Errorf("budget: inherited spend: %w", err)
		}
	}
	if run.ID == "" {
		run.ID = privrand.ID(16)
	}
	if run.Time.IsZero() {
		run.Time = time.Now()
	}
	for _, w := range run.Witnesses {
		if err := w.check(); err != nil {
			return nil, err
		}
	}
	var items []item
	var after Composition
	var head Head
	err := retry(func(again bool) (err error) {
		items, after, head, err = s.reserve(fp, run, planned, budgetEps, again)
		return err
	})
	if err != nil {
		return nil, err
	}
	// The spend before, for the run's report, by the RDP bound (milliseconds; the PLD bound
	// may take a second or more, and Commit computes it once the run is done); after is
	// what reserve composed: the RDP bound, or the PLD bound where only that one kept the
	// plan within budgetEps.
	d := defaultDelta(append(items, item{planned, run.Delta}))
	before, err := composeItems(items, d, run.Accountant == "pld")
	if err != nil {
		return nil, err
	}
	if run.Accountant == "pld" && strings.HasPrefix(after.Method, "rdp") {
		// The run's accountant is the PLD: its lines report the smaller bound.
		if after, err = composeItems(append(items, item{planned, run.Delta}), d, true); err != nil {
			return nil, err
		}
	}
	return &Reservation{store: s, fp: fp, run: run.ID, delta: run.Delta, planned: planned, Fingerprint: fp, Before: before, After: after, head: head, rdpOnly: run.Accountant == "rdp"}, nil
}

// reserve appends the import (if due) and the reservation under the lock, and returns
// the data set's runs before this one and their composition with the planned spend
// (the bound that was checked against budgetEps). again says that an earlier attempt
// failed with the connection to a database store, after which it may have been made: a
// reservation of run.ID found then is that attempt's.
func (s *Store) reserve(fp string, run Run, planned Spend, budgetEps float64, again bool) (_ []item, _ Composition, _ Head, err error) {
	tx, err := s.b.begin(fp)
	if err != nil {
		return nil, Composition{}, Head{}, err
	}
	defer tx.end()
	l, err := s.read(tx, fp)
	if err != nil {
		return nil, Composition{}, Head{}, err
	}
	if l.byRun[run.ID] != nil {
		if !again {
			return nil, Composition{}, Head{}, fmt.Errorf("budget: run %s is already recorded", run.ID)
		}
		// The earlier attempt was made (with its import, in the same transaction).
		var items []item
		for _, r := range l.runs {
			if r.first.Run != run.ID {
				items = append(items, item{r.spend(), r.first.Delta})
			}
		}
		all := append(slices.Clone(items), item{planned, run.Delta})
		after, err := composeItems(all, defaultDelta(all), false)
		return items, after, l.head(), err
	}
	for _, w := range run.Witnesses {
		if err := l.checkWitness(w); err != nil {
			return nil, Composition{}, Head{}, err
		}
	}
	stamp := run.Time.UTC().Format(time.RFC3339Nano)
	if p := run.Parent; p != nil && run.Inherited != nil {
		if missing := l.unheld(p.Run, *run.Inherited); missing != nil {
			imp := entry{Kind: kindImport, Run: privrand.ID(16), Lineage: p.Run, Tool: run.Tool, Name: run.Name,
				Command: fmt.Sprintf("(the steps of the resumed checkpoint's ledger, step %d, that this store did not hold)", p.Step), Time: stamp, Delta: run.Delta, Spend: *missing}
			if err := s.append(tx, l, imp); err != nil {
				return nil, Composition{}, Head{}, err
			}
		}
	}
	items := l.items()
	// The RDP bound first (fast; it also checks that the plan composes with the data
	// set's runs); the PLD bound, smaller, only when RDP alone would refuse.
	all := append(slices.Clone(items), item{planned, run.Delta})
	d := defaultDelta(all)
	after, err := composeItems(all, d, false)
	if err == nil && budgetEps > 0 && !(after.Epsilon <= budgetEps) {
		after, err = composeItems(all, d, true)
	}
	if err != nil {
		return nil, Composition{}, Head{}, err
	}
	if budgetEps > 0 && !(after.Epsilon <= budgetEps) {
		before, err := compose(items, d)
		if err != nil {
			return nil, Composition{}, Head{}, err
		}
		return nil, Composition{}, Head{}, &OverBudgetError{Fingerprint: fp, Name: run.Name, Budget: budgetEps, Before: before, After: after}
	}
	e := entry{Kind: kindReserve, Run: run.ID, Lineage: run.Lineage, Parent: run.Parent, Tool: run.Tool, Name: run.Name,
		Command: run.Command, Time: stamp, Delta: run.Delta, Spend: planned}
	if err := s.append(tx, l, e); err != nil {
		return nil, Composition{}, Head{}, err
	}
	if err := tx.commit(); err != nil {
		return nil, Composition{}, Head{}, err
	}
	return items, after, l.head(), nil
}

// Commit settles the reservation with what the run actually spent (the steps it took,
// however it stopped), which replaces the planned spend in the data set's composition,
// and returns the data set's settled spend. A run killed before Commit stays counted at
// its reservation. Commit a spend that covers every step taken: the store cannot see
// steps that no one reports.
func (r *Reservation) Commit(actual Spend) (Composition, error) {
	if r.committed {
		return Composition{}, errors.New("budget: the reservation is already settled")
	}
	if err := actual.Validate(); err != nil {
		return Composition{}, err
	}
	var items []item
	var head Head
	err := retry(func(again bool) (err error) {
		items, head, err = r.commit(actual, again)
		return err
	})
	if err != nil {
		if retryable(err) {
			// The database stayed out of reach: keep the commit for the next command.
			return Composition{}, r.keepPending(actual, err)
		}
		return Composition{}, err
	}
	r.head = head
	r.committed = true
	return composeItems(items, 0, !r.rdpOnly)
}

// commit appends the commit under the lock and returns the data set's runs. again says
// that an earlier attempt failed with the connection to a database store, after which
// it may have been made: a commit of the run found then is that attempt's.
func (r *Reservation) commit(actual Spend, again bool) ([]item, Head, error) {
	s := r.store
	tx, err := s.b.begin(r.fp)
	if err != nil {
		return nil, Head{}, err
	}
	defer tx.end()
	l, err := s.read(tx, r.fp)
	if err != nil {
		return nil, Head{}, err
	}
	st := l.byRun[r.run]
	if again && st != nil && st.commit != nil {
		return l.items(), l.head(), nil
	}
	if st == nil || st.commit != nil {
		return nil, Head{}, &VerifyError{Fingerprint: r.fp, Entry: -1, Reason: fmt.Sprintf("the reservation of run %s is missing or already settled", r.run)}
	}
	e := entry{Kind: kindCommit, Run: r.run, Time: time.Now().UTC().Format(time.RFC3339Nano), Delta: r.delta, Spend: actual}
	if err := s.append(tx, l, e); err != nil {
		return nil, Head{}, err
	}
	if err := tx.commit(); err != nil {
		return nil, Head{}, err
	}
	return l.items(), l.head(), nil
}

// ErrNoKey reports a Seal on a store opened without a key.
var ErrNoKey = errors.New("budget: sealing a data set's ledger needs the store's key")

// Seal keys data set fp's ledger from now on: it appends a seal entry, keyed with the
// store's key, after which every entry and the head must be keyed with it (a run without
// the key can no longer read or extend the data set's ledger, and no one without it can
// forge an entry). The entries before the seal stay as they were, and the seal entry
// chains them: editing them breaks the seal's chain. A data set with no ledger yet gets
// one that starts with its seal, so that all its entries are keyed. Seal reports whether
// it sealed the ledger (false: it was sealed already). Sealing is the explicit step that
// turns a ledger keyed: a store opened with a key writes unkeyed entries to an unsealed
// ledger.
func (s *Store) Seal(fp string) (bool, error) {
	if err := checkFingerprint(fp); err != nil {
		return false, err
	}
	if s.key == nil {
		return false, ErrNoKey
	}
	var sealed bool
	err := retry(func(bool) (err error) {
		sealed, err = s.seal(fp)
		return err
	})
	return sealed, err
}

func (s *Store) seal(fp string) (bool, error) {
	tx, err := s.b.begin(fp)
	if err != nil {
		return false, err
	}
	defer tx.end()
	l, err := s.read(tx, fp)
	if err != nil {
		return false, err
	}
	if l.keyed {
		return false, nil
	}
	e := entry{Kind: kindSeal, Run: privrand.ID(16), Tool: "privacy budget -seal", Time: time.Now().UTC().Format(time.RFC3339Nano)}
	if err := s.append(tx, l, e); err != nil {
		return false, err
	}
	return true, tx.commit()
}

// Fingerprints lists the data sets of the store (those with a ledger or a head file),
// sorted.
func (s *Store) Fingerprints() (fps []string, err error) {
	err = retry(func(bool) error {
		tx, err := s.b.begin("")
		if err != nil {
			return err
		}
		defer tx.end()
		fps, err = tx.fingerprints()
		return err
	})
	return fps, err
}
