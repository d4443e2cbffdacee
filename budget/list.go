package budget

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Dataset is one data set's summary: its spend composed over all its runs.
type Dataset struct {
	Fingerprint string
	// Name is the data flag of its most recent run.
	Name string
	// Runs counts its runs (imports of resumed checkpoints' ledgers included), Unsettled
	// those still counted at their reservation (running, or killed).
	Runs, Unsettled int
	// Steps is the number of subsampled Gaussian steps of its runs.
	Steps int
	// Last is the time of its most recent run.
	Last time.Time
	// Head is the ledger's last entry: keep it elsewhere to compare later (a ledger that
	// no longer holds it was rolled back).
	Head Head
	// Keyed reports a sealed ledger (Store.Seal): its entries from the seal on are keyed.
	Keyed bool
	Composition
}

// RunRecord is one run of a data set.
type RunRecord struct {
	ID string
	// Import is true for the recorded ledger of a resumed checkpoint whose lineage the
	// store had not seen.
	Import  bool
	Lineage string
	Parent  *Parent
	Tool    string
	Name    string
	Command string
	Time    time.Time
	Delta   float64
	// Reserved is the planned spend; Spend what counts: the settled spend once Settled.
	Reserved, Spend Spend
	Settled         bool
	// Own is the run's own spend at its δ.
	Own Composition
}

// Datasets verifies and summarises every data set of the store, at δ = delta (0: each
// data set's default δ, the smallest of its runs'). The first data set that fails
// verification makes it fail (a *VerifyError naming it): a store is never
// half-reported.
func (s *Store) Datasets(delta float64) (out []Dataset, err error) {
	err = retry(func(bool) (err error) {
		out, err = s.datasets(delta)
		return err
	})
	return out, err
}

func (s *Store) datasets(delta float64) ([]Dataset, error) {
	tx, err := s.b.begin("")
	if err != nil {
		return nil, err
	}
	defer tx.end()
	fps, err := tx.fingerprints()
	if err != nil {
		return nil, err
	}
	var ledgers []*ledger
	for _, fp := range fps {
		l, err := s.read(tx, fp)
		if err != nil {
			return nil, err
		}
		if len(l.runs) > 0 {
			ledgers = append(ledgers, l)
		}
	}
	tx.end() // composing (the PLD bound) may take seconds: not under the lock
	var out []Dataset
	for _, l := range ledgers {
		d, err := l.summary(delta)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func (l *ledger) summary(delta float64) (Dataset, error) {
	d := Dataset{Fingerprint: l.fp, Runs: len(l.runs), Keyed: l.keyed, Head: l.head()}
	for _, r := range l.runs {
		if r.first.Kind == kindReserve && r.commit == nil {
			d.Unsettled++
		}
		d.Steps += r.spend().Steps()
		d.Name = r.first.Name
		if t, err := time.Parse(time.RFC3339Nano, r.first.Time); err == nil {
			d.Last = t
		}
	}
	c, err := compose(l.items(), delta)
	if err != nil {
		return Dataset{}, fmt.Errorf("data set %s: %w", l.fp, err)
	}
	d.Composition = c
	return d, nil
}

// Runs verifies data set fp (or the one data set whose fingerprint starts with fp) and
// returns its summary at δ = delta (0: its default) and its runs, oldest first.
func (s *Store) Runs(fp string, delta float64) (d Dataset, runs []RunRecord, err error) {
	err = retry(func(bool) (err error) {
		d, runs, err = s.runs(fp, delta)
		return err
	})
	return d, runs, err
}

func (s *Store) runs(fp string, delta float64) (Dataset, []RunRecord, error) {
	tx, err := s.b.begin("")
	if err != nil {
		return Dataset{}, nil, err
	}
	defer tx.end()
	fps, err := tx.fingerprints()
	if err != nil {
		return Dataset{}, nil, err
	}
	var match []string
	for _, f := range fps {
		if fp != "" && strings.HasPrefix(f, strings.ToLower(fp)) {
			match = append(match, f)
		}
	}
	switch len(match) {
	case 0:
		return Dataset{}, nil, fmt.Errorf("budget: no data set with fingerprint %q in the store %s", fp, s.dir)
	case 1:
	default:
		return Dataset{}, nil, fmt.Errorf("budget: fingerprint %q matches %d data sets: give more digits", fp, len(match))
	}
	l, err := s.read(tx, match[0])
	tx.end()
	if err != nil {
		return Dataset{}, nil, err
	}
	if len(l.runs) == 0 {
		return Dataset{}, nil, fmt.Errorf("budget: data set %s has no runs", match[0])
	}
	d, err := l.summary(delta)
	if err != nil {
		return Dataset{}, nil, err
	}
	var runs []RunRecord
	// Each run's own ε: identical spends (a search's trials, repeated plans) are composed
	// once, and the PLD bound (tens of milliseconds each) only for the first
	// ownPLDLimit distinct ones, later ones by RDP alone (their Composition says which),
	// so that a ledger of many runs, honest or hostile, lists in bounded time.
	own := map[string]Composition{}
	for _, r := range l.runs {
		e := r.first
		t, _ := time.Parse(time.RFC3339Nano, e.Time)
		rec := RunRecord{ID: e.Run, Import: e.Kind == kindImport, Lineage: e.Lineage, Parent: e.Parent, Tool: e.Tool,
			Name: e.Name, Command: e.Command, Time: t, Delta: e.Delta, Reserved: e.Spend, Spend: r.spend(), Settled: r.commit != nil}
		key, err := json.Marshal(struct {
			S Spend
			D float64
		}{rec.Spend, e.Delta})
		if err != nil {
			return Dataset{}, nil, fmt.Errorf("data set %s, run %s: %w", match[0], e.Run, err)
		}
		c, ok := own[string(key)]
		if !ok {
			if c, err = composeItems([]item{{rec.Spend, e.Delta}}, 0, len(own) < ownPLDLimit); err != nil {
				return Dataset{}, nil, fmt.Errorf("data set %s, run %s: %w", match[0], e.Run, err)
			}
			own[string(key)] = c
		}
		rec.Own = c
		runs = append(runs, rec)
	}
	return d, runs, nil
}

// ownPLDLimit is how many distinct runs' own ε Runs bounds by PLD as well as RDP.
const ownPLDLimit = 32
