package budget

import (
	"bytes"
	"fmt"
	"strings"
)

// Migrated is what Migrate did with one data set.
type Migrated struct {
	Fingerprint string
	// Copied entries were appended to the destination; Held ones it held already
	// (an earlier migration, or runs recorded there since).
	Copied, Held int
}

// Migrate copies every data set of the store src into the store dst (a store directory
// into a database, typically), entry for entry, the lines exactly as src holds them (so
// their hashes, HMACs and chain are the same, and the checkpoints' witnesses of src's
// ledgers stay valid in dst). Every ledger of src is verified first: one that fails
// makes Migrate fail before it writes anything. A data set that dst holds already is
// extended when its entries are the first entries of src's (a migration run twice, or
// cut short, copies the rest: Copied 0 the second time) and left alone when src's are
// the first of its own (runs recorded in dst since); any other difference is refused
// (an error naming the data set and the entry), nothing of that data set is written, and
// the data sets after it are not migrated. Each data set is copied in one transaction
// and verified in dst before it is committed. Both stores need the key of src's sealed
// ledgers.
func Migrate(src, dst *Store) ([]Migrated, error) {
	var ledgers []*ledger
	err := retry(func(bool) error {
		ledgers = nil
		tx, err := src.b.begin("")
		if err != nil {
			return err
		}
		defer tx.end()
		fps, err := tx.fingerprints()
		if err != nil {
			return err
		}
		for _, fp := range fps {
			l, err := src.read(tx, fp)
			if err != nil {
				return fmt.Errorf("%w (nothing was migrated)", err)
			}
			ledgers = append(ledgers, l)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Migrated
	for _, from := range ledgers {
		var m Migrated
		err := retry(func(bool) (err error) {
			m, err = dst.copyLedger(from, src.dir)
			return err
		})
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
	return out, nil
}

// copyLedger appends to s the entries of from that s does not hold yet.
func (s *Store) copyLedger(from *ledger, srcName string) (Migrated, error) {
	m := Migrated{Fingerprint: from.fp}
	tx, err := s.b.begin(from.fp)
	if err != nil {
		return m, err
	}
	defer tx.end()
	l, err := s.read(tx, from.fp)
	if err != nil {
		return m, err
	}
	n := min(len(l.lines), len(from.lines))
	for i := range n {
		if !bytes.Equal(l.lines[i], from.lines[i]) {
			return m, fmt.Errorf("budget: data set %s: the store %s holds other entries than the store %s (entry %d differs): not overwritten; nothing of this data set, or of the data sets after it, was migrated", from.fp, s.dir, srcName, i)
		}
	}
	m.Held = n
	if len(l.lines) >= len(from.lines) {
		return m, nil
	}
	for i := n; i < len(from.lines); i++ {
		var key []byte
		if strings.HasPrefix(string(from.lines[i]), algKeyed+":") {
			key = s.key
			if key == nil {
				return m, fmt.Errorf("%w (data set %s: its sealed entries keep their HMACs, and the head of the copy must be keyed)", ErrNoKey, from.fp)
			}
		}
		line := append(bytes.Clone(from.lines[i]), '\n')
		if err := tx.put(l, line, i, from.hashes[i], key); err != nil {
			return m, err
		}
		l.appended(from.entries[i], line, from.hashes[i], key)
		m.Copied++
	}
	// Verify the copy as any reader will, before it is committed.
	if _, err := s.read(tx, from.fp); err != nil {
		return m, fmt.Errorf("budget: data set %s: the copy does not verify (not committed): %w", from.fp, err)
	}
	return m, tx.commit()
}
