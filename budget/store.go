// The budget store's API: Open, Reserve and Reservation.Commit, Seal, Fingerprints, and
// the errors they return. The ledger's rules are in chain.go, where the ledgers are kept
// in backend.go (files.go, postgres.go), composition in compose.go.

package budget

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/privtrain/privtrain/internal/privrand"
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
