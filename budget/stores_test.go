package budget

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/privtrain/privtrain/internal/pgsql"
	"github.com/privtrain/privtrain/internal/pgtest"
)

// The store tests run on both stores: bothStores runs a test as the subtests "file" and
// "postgres" (skipped, with the reason, where PostgreSQL cannot start), and openStore and
// the raw helpers below (lines, writeLines, headOf, setHead, removeLedger, reopen) pick
// the store of the subtest by its name, so that one test body checks both. A database
// store gets a schema of its own (search_path) in the test cluster's database; the raw
// helpers edit its rows as the database's owner, the way a tamperer with the owner's
// rights would.

// The database stores of the tests use internal/pgsql, as the commands built with the tag
// postgres do.
func init() { RegisterPostgres(pgsql.Connect) }

func bothStores(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	t.Run("file", f)
	t.Run("postgres", func(t *testing.T) {
		pgtest.Require(t)
		f(t)
	})
}

// onPostgres reports whether t runs in bothStores' "postgres" half.
func onPostgres(t testing.TB) bool { return strings.Contains(t.Name()+"/", "/postgres/") }

var (
	ownerMu   sync.Mutex
	ownerConn *pgx.Conn
	schemas   = map[*Store]string{} // a database store's schema
	schemaN   int
)

// owner is a connection to the test cluster as its superuser.
func owner(t testing.TB) *pgx.Conn {
	t.Helper()
	srv := pgtest.Require(t)
	ownerMu.Lock()
	defer ownerMu.Unlock()
	if ownerConn == nil || ownerConn.IsClosed() {
		c, err := pgx.Connect(context.Background(), srv.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		ownerConn = c
	}
	return ownerConn
}

func ownerExec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := owner(t).Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// pgURL creates a schema of its own and returns the URL of a store in it.
func pgURL(t testing.TB) (string, string) {
	t.Helper()
	srv := pgtest.Require(t)
	ownerMu.Lock()
	schemaN++
	schema := fmt.Sprintf("s%d_%d", os.Getpid(), schemaN)
	ownerMu.Unlock()
	ownerExec(t, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { owner(t).Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	return srv.URL("postgres", "search_path="+schema), schema
}

func openStore(t *testing.T, key []byte) *Store {
	t.Helper()
	if !onPostgres(t) {
		s, err := Open(t.TempDir(), key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	url, schema := pgURL(t)
	return openPG(t, url, schema, key)
}

func openPG(t testing.TB, url, schema string, key []byte) *Store {
	t.Helper()
	s, err := Open(url, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ownerMu.Lock()
	schemas[s] = schema
	ownerMu.Unlock()
	return s
}

// reopen opens s's store again with key.
func reopen(t *testing.T, s *Store, key []byte) *Store {
	t.Helper()
	if sc, ok := schemas[s]; ok {
		return openPG(t, s.b.(*pgBackend).url, sc, key)
	}
	o, err := Open(s.dir, key)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// readLedger reads and verifies data set fp's ledger under the store's lock.
func readLedger(s *Store, fp string) (*ledger, error) {
	tx, err := s.b.begin(fp)
	if err != nil {
		return nil, err
	}
	defer tx.end()
	return s.read(tx, fp)
}

func lines(t *testing.T, s *Store) [][]byte { return linesOf(t, s, testFP) }

// linesOf is data set fp's ledger, line by line, each with its newline.
func linesOf(t *testing.T, s *Store, fp string) [][]byte {
	t.Helper()
	if sc, ok := schemas[s]; ok {
		rows, err := owner(t).Query(context.Background(), "SELECT line FROM "+sc+".privtrain_budget_entries WHERE fingerprint = $1 ORDER BY seq", fp)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]byte, error) {
			var b []byte
			err := r.Scan(&b)
			return append(b, '\n'), err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ls
	}
	b, err := os.ReadFile(s.ledgerPath(fp))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

func writeLines(t *testing.T, s *Store, ls [][]byte) { writeLinesOf(t, s, testFP, ls) }

// writeLinesOf replaces data set fp's ledger with ls (lines with their newline; in a
// database each is a row, at its position).
func writeLinesOf(t *testing.T, s *Store, fp string, ls [][]byte) {
	t.Helper()
	if sc, ok := schemas[s]; ok {
		ownerExec(t, "DELETE FROM "+sc+".privtrain_budget_entries WHERE fingerprint = $1", fp)
		var rows [][]any
		for i, l := range ls {
			rows = append(rows, []any{fp, i, string(bytes.TrimSuffix(l, []byte("\n")))})
		}
		if _, err := owner(t).CopyFrom(context.Background(), pgx.Identifier{sc, "privtrain_budget_entries"}, []string{"fingerprint", "seq", "line"}, pgx.CopyFromRows(rows)); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(s.ledgerPath(fp), bytes.Join(ls, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// removeLedger removes data set fp's ledger (not its head).
func removeLedger(t *testing.T, s *Store, fp string) {
	t.Helper()
	if sc, ok := schemas[s]; ok {
		ownerExec(t, "DELETE FROM "+sc+".privtrain_budget_entries WHERE fingerprint = $1", fp)
		return
	}
	os.Remove(s.ledgerPath(fp))
}

// headOf is data set fp's head as a head file holds it (nil: none).
func headOf(t *testing.T, s *Store, fp string) []byte {
	t.Helper()
	if sc, ok := schemas[s]; ok {
		var h headRecord
		err := owner(t).QueryRow(context.Background(), "SELECT seq, hash, alg, mac FROM "+sc+".privtrain_budget_heads WHERE fingerprint = $1 ORDER BY seq DESC LIMIT 1", fp).Scan(&h.Seq, &h.Hash, &h.Alg, &h.Mac)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(h)
		return b
	}
	b, err := os.ReadFile(s.headPath(fp))
	if err != nil {
		return nil
	}
	return b
}

// setHead replaces data set fp's head (in a database: every head row, by one row) with
// b, as a head file holds it; nil removes it.
func setHead(t *testing.T, s *Store, fp string, b []byte) {
	t.Helper()
	if sc, ok := schemas[s]; ok {
		ownerExec(t, "DELETE FROM "+sc+".privtrain_budget_heads WHERE fingerprint = $1", fp)
		if b == nil {
			return
		}
		var h headRecord
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatal(err)
		}
		ownerExec(t, "INSERT INTO "+sc+".privtrain_budget_heads (fingerprint, seq, hash, alg, mac) VALUES ($1, $2, $3, $4, $5)", fp, max(h.Seq, 0), h.Hash, h.Alg, h.Mac)
		return
	}
	if b == nil {
		os.Remove(s.headPath(fp))
		return
	}
	if err := os.WriteFile(s.headPath(fp), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeHeadOf sets data set fp's head to entry seq with hash, keyed with key, as a store
// would write it.
func writeHeadOf(t *testing.T, s *Store, fp string, seq int, hash string, key []byte) {
	t.Helper()
	b, err := json.Marshal(newHead(fp, seq, hash, key))
	if err != nil {
		t.Fatal(err)
	}
	setHead(t, s, fp, b)
}
