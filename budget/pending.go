package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/internal/strictjson"
)

// A commit that a database store could not take (the connection lost, and every retry
// failed) is kept in a pending file, PendingDir()/RUN.json, written atomically; the next
// command that opens that store delivers it (DeliverPending). Until then the store counts
// the run at its reservation, which covers every planned step: an over-count, never an
// under-count.

// PendingDir is where commits wait for their database store: $XDG_CACHE_HOME (or the
// system's user cache directory)/privtrain/pending.
func PendingDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("budget: no user cache directory for pending commits: %w", err)
	}
	return filepath.Join(d, "privtrain", "pending"), nil
}

// pendingCommit is a pending file.
type pendingCommit struct {
	Version     int     `json:"v"`
	Store       string  `json:"store"` // the store's URL without its password
	Fingerprint string  `json:"fingerprint"`
	Run         string  `json:"run"`
	Delta       float64 `json:"delta"`
	Time        string  `json:"time"` // when the run stopped
	Spend       Spend   `json:"spend"`
}

// UnrecordedError is a commit that the database store could not take: Steps steps that
// ran are not recorded as the run's commit, and the store keeps counting the run's
// reservation of Planned steps. Pending is the file the commit waits in ("" when it could
// not be written either: then the reservation stays).
type UnrecordedError struct {
	Store, Fingerprint, Run string
	Steps, Planned          int
	Pending                 string
	Err, PendingErr         error
}

func (e *UnrecordedError) Error() string {
	msg := fmt.Sprintf("budget store %s: the commit of run %s on data set %s could not be made (%v): %d steps that ran are unrecorded; the store still counts the run's reservation of %d planned steps, an over-count, never an under-count",
		e.Store, e.Run, short(e.Fingerprint), e.Err, e.Steps, e.Planned)
	if e.Pending == "" {
		return msg + fmt.Sprintf("; the commit could not be kept locally either (%v): the reservation stays", e.PendingErr)
	}
	return msg + fmt.Sprintf(", until the next command that uses this store delivers the commit, kept in %s", e.Pending)
}

func (e *UnrecordedError) Unwrap() error { return e.Err }

// keepPending writes the reservation's commit to a pending file after the database
// failed (err), and returns the *UnrecordedError that says so.
func (r *Reservation) keepPending(actual Spend, err error) error {
	ue := &UnrecordedError{Store: r.store.dir, Fingerprint: r.fp, Run: r.run, Steps: actual.Steps(), Planned: r.planned.Steps(), Err: err}
	dir, perr := PendingDir()
	if perr == nil {
		perr = os.MkdirAll(dir, 0o700)
	}
	if perr == nil {
		p := pendingCommit{Version: 1, Store: r.store.dir, Fingerprint: r.fp, Run: r.run, Delta: r.delta, Time: time.Now().UTC().Format(time.RFC3339Nano), Spend: actual}
		path := filepath.Join(dir, r.run+".json")
		perr = atomicfile.Write(path, 0o600, func(w io.Writer) error { return json.NewEncoder(w).Encode(p) })
		if perr == nil {
			ue.Pending = path
		}
	}
	ue.PendingErr = perr
	return ue
}

// maxPending bounds a pending file: a commit's spend is far smaller.
const maxPending = 64 << 20

// DeliverPending delivers the commits waiting in PendingDir for this store (a database
// store; a file store has none) and returns one line per commit delivered or found
// already delivered. A commit that cannot be delivered now (the database out of reach
// again) stays pending; one that the ledger refuses (its reservation missing) stays too,
// and the error says so. Its reservation counts meanwhile.
func (s *Store) DeliverPending() ([]string, error) {
	if _, ok := s.b.(*pgBackend); !ok {
		return nil, nil
	}
	dir, err := PendingDir()
	if err != nil {
		return nil, nil // nowhere to look: nothing was kept there
	}
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("budget: pending commits: %w", err)
	}
	var said []string
	var errs []error
	for _, de := range des {
		name := de.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		path := filepath.Join(dir, name)
		fi, err := de.Info()
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxPending {
			continue
		}
		data, err := readFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("pending commit %s: %w", path, err))
			continue
		}
		var p pendingCommit
		if err := strictjson.Unmarshal(data, &p); err != nil || p.Version != 1 || checkFingerprint(p.Fingerprint) != nil || p.Run == "" || p.Spend.Validate() != nil {
			errs = append(errs, fmt.Errorf("pending commit %s: not a pending commit of privtrain (left in place)", path))
			continue
		}
		if p.Store != s.dir {
			continue // another store's
		}
		line, err := s.deliver(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("pending commit %s (left in place; the run's reservation counts meanwhile): %w", path, err))
			continue
		}
		if err := os.Remove(path); err != nil {
			errs = append(errs, fmt.Errorf("pending commit %s, delivered: %w", path, err))
		}
		said = append(said, line+" (from "+path+")")
	}
	slices.Sort(said)
	return said, errors.Join(errs...)
}

// deliver appends p's commit unless its run is settled already.
func (s *Store) deliver(p pendingCommit) (string, error) {
	var line string
	err := retry(func(bool) error {
		tx, err := s.b.begin(p.Fingerprint)
		if err != nil {
			return err
		}
		defer tx.end()
		l, err := s.read(tx, p.Fingerprint)
		if err != nil {
			return err
		}
		st := l.byRun[p.Run]
		switch {
		case st == nil || st.first.Kind != kindReserve:
			return fmt.Errorf("budget: data set %s holds no reservation of run %s", short(p.Fingerprint), p.Run)
		case st.commit != nil:
			line = fmt.Sprintf("budget: the pending commit of run %s on data set %s was delivered already", p.Run, short(p.Fingerprint))
			return nil
		}
		e := entry{Kind: kindCommit, Run: p.Run, Time: p.Time, Delta: p.Delta, Spend: p.Spend}
		if err := s.append(tx, l, e); err != nil {
			return err
		}
		if err := tx.commit(); err != nil {
			return err
		}
		line = fmt.Sprintf("budget: delivered the pending commit of run %s on data set %s: %d steps (its reservation counted %d), left by a run whose connection to %s was lost", p.Run, short(p.Fingerprint), p.Spend.Steps(), st.first.Spend.Steps(), s.dir)
		return nil
	})
	return line, err
}
