package budget

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync"
	"time"
)

// SQLConn is what a database store needs of a PostgreSQL client: one connection with at
// most one open transaction (Exec and Query run in it). Package internal/pgsql is one
// (pgx); RegisterPostgres installs it. An error the server reports has a method
// SQLState() string (its SQLSTATE code).
type SQLConn interface {
	Begin(ctx context.Context, readOnly bool) error
	Exec(ctx context.Context, sql string, args ...any) error
	Query(ctx context.Context, sql string, args []any, row func(scan func(dest ...any) error) error) error
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
	Close(ctx context.Context) error
	IsClosed() bool
}

// connector connects to a database URL, within timeout unless the URL says otherwise
// (nil: this build has no PostgreSQL client).
var connector func(ctx context.Context, url string, timeout time.Duration) (SQLConn, error)

// RegisterPostgres installs the PostgreSQL client of database stores: connect connects
// to a URL, within timeout unless the URL says otherwise (internal/pgsql.Connect; nil
// removes it). The commands do it in builds with the tag postgres (cmd/internal/cli),
// the tests of database stores too: the client links net and os/user, which would make
// the default build use cgo where it is available.
func RegisterPostgres[C SQLConn](connect func(ctx context.Context, url string, timeout time.Duration) (C, error)) {
	if connect == nil {
		connector = nil
		return
	}
	connector = func(ctx context.Context, url string, timeout time.Duration) (SQLConn, error) {
		c, err := connect(ctx, url, timeout)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// ErrNoPostgres reports a database store opened by a build without a PostgreSQL client.
var ErrNoPostgres = errors.New("this build has no PostgreSQL client (the default build links no network code, so that it stays static): build privtrain with -tags postgres (CGO_ENABLED=0 for a static binary) for database stores")

// A database store keeps the same ledgers as a store directory, one row per entry (its
// line, exactly as a ledger file holds it, without the newline) and one row per head
// (a new row for every append: the data set's head is its row of the highest seq), so
// that a role that may only SELECT and INSERT (docs/budget.md) can run every command:
// no row is ever updated or deleted. Each read and append of a data set is one
// transaction holding a transaction-level advisory lock on the data set
// (pg_advisory_xact_lock), which two processes on any machines reserving on one data set
// both take: the second reads the first's reservation. The primary keys refuse a second
// entry or head at one position even if a lock were lost.

// PostgresSchema creates the tables of a database store (in the first schema of the
// search_path). A store creates them when they are missing and its role may; otherwise
// the database's owner runs it (docs/budget.md).
const PostgresSchema = `CREATE TABLE IF NOT EXISTS privtrain_budget_entries (
    fingerprint text    NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    seq         integer NOT NULL CHECK (seq >= 0),
    line        text    NOT NULL,
    PRIMARY KEY (fingerprint, seq)
);
CREATE TABLE IF NOT EXISTS privtrain_budget_heads (
    fingerprint text    NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    seq         integer NOT NULL CHECK (seq >= 0),
    hash        text    NOT NULL,
    alg         text    NOT NULL,
    mac         text    NOT NULL,
    PRIMARY KEY (fingerprint, seq)
);`

// IsURL reports whether a store location is a PostgreSQL URL (postgres://… or
// postgresql://…) rather than a directory.
func IsURL(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// RedactURL returns a database URL without its password (in the user information or a
// password parameter), for messages and the command lines that the store records.
func RedactURL(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		scheme, _, _ := strings.Cut(loc, "://")
		return scheme + "://(a URL that does not parse)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.User(u.User.Username())
		}
	}
	if q := u.Query(); q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// pgTimeout bounds one transaction (the lock waits behind other runs' reservations,
// which compose under it) and pgConnectTimeout one connection attempt.
const (
	pgTimeout        = 2 * time.Minute
	pgConnectTimeout = 10 * time.Second
)

// pgBackend is a PostgreSQL database: one connection, made again after it fails.
type pgBackend struct {
	url, where string
	mu         sync.Mutex // held from begin to end: a connection serves one transaction
	conn       SQLConn
}

// openPostgres opens the database store at rawURL: it connects (an unreachable server is
// an error naming the URL without its password) and creates the tables if they are
// missing.
func openPostgres(rawURL string, key []byte) (*Store, error) {
	where := RedactURL(rawURL)
	if connector == nil {
		return nil, fmt.Errorf("budget: store %s: %w", where, ErrNoPostgres)
	}
	b := &pgBackend{url: rawURL, where: where}
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	if err := b.connect(ctx); err != nil {
		return nil, err
	}
	if err := b.ensureSchema(ctx); err != nil {
		b.close()
		return nil, err
	}
	if len(key) == 0 {
		key = nil
	}
	return &Store{dir: where, key: bytes.Clone(key), b: b}, nil
}

// redactErr keeps a password out of an error that may quote the URL.
func redactErr(err error, rawURL string) error {
	u, perr := url.Parse(rawURL)
	if perr != nil || u.User == nil {
		return err
	}
	if pw, ok := u.User.Password(); ok && pw != "" && strings.Contains(err.Error(), pw) {
		return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
	}
	return err
}

func (b *pgBackend) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	retry := true
	if c, ok := sqlState(err); ok {
		// Connection exceptions, operator intervention (shutdown, restart), serialisation
		// failures and deadlocks, insufficient resources: another try may succeed. The
		// rest (a constraint, a permission) would fail again.
		retry = strings.HasPrefix(c, "08") || strings.HasPrefix(c, "57") || strings.HasPrefix(c, "53") || c == "40001" || c == "40P01"
	}
	if retry && b.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		b.conn.Close(ctx)
		cancel()
		b.conn = nil
	}
	return &dbError{where: b.where, op: op, err: redactErr(err, b.url), retry: retry}
}

// sqlState is the SQLSTATE code of an error the server reported.
func sqlState(err error) (string, bool) {
	var se interface{ SQLState() string }
	if errors.As(err, &se) {
		return se.SQLState(), true
	}
	return "", false
}

func (b *pgBackend) connect(ctx context.Context) error {
	c, err := connector(ctx, b.url, pgConnectTimeout)
	if err != nil {
		// A URL that does not parse, or a role the server refuses, fails again; the
		// rest (no route, refused, timed out, the server starting up) may not.
		_, refused := sqlState(err)
		retry := !refused && !strings.Contains(err.Error(), "cannot parse")
		if c, ok := sqlState(err); ok && (strings.HasPrefix(c, "57") || strings.HasPrefix(c, "08") || strings.HasPrefix(c, "53")) {
			retry = true
		}
		return &dbError{where: b.where, op: "connecting", err: redactErr(err, b.url), retry: retry}
	}
	b.conn = c
	return nil
}

// ensureSchema creates the tables when they are missing (one process at a time).
func (b *pgBackend) ensureSchema(ctx context.Context) error {
	var ok bool
	const q = `SELECT to_regclass('privtrain_budget_entries') IS NOT NULL AND to_regclass('privtrain_budget_heads') IS NOT NULL`
	if err := b.conn.Query(ctx, q, nil, func(scan func(...any) error) error { return scan(&ok) }); err != nil {
		return b.fail("looking for the ledger tables", err)
	}
	if ok {
		return nil
	}
	err := b.conn.Begin(ctx, false)
	if err == nil {
		if err = b.conn.Exec(ctx, `SELECT pg_advisory_xact_lock(7346117)`); err == nil {
			err = b.conn.Exec(ctx, PostgresSchema)
		}
		if err == nil {
			err = b.conn.Commit(ctx)
		} else {
			b.conn.Rollback(ctx)
		}
	}
	if c, _ := sqlState(err); c == "42501" {
		return fmt.Errorf("budget store %s: the database has no privtrain ledger tables and this role may not create them: have its owner create them (the SQL is in docs/budget.md): %v", b.where, err)
	}
	return b.fail("creating the ledger tables", err)
}

func (b *pgBackend) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := b.conn.Close(ctx)
	b.conn = nil
	return err
}

// lockKey is data set fp's advisory lock: the first 64 bits of its fingerprint (a
// SHA-256). Two data sets that share them only wait for each other.
func lockKey(fp string) int64 {
	k, _ := hex.DecodeString(fp[:16])
	var v uint64
	for _, c := range k {
		v = v<<8 | uint64(c)
	}
	return int64(v)
}

func (b *pgBackend) begin(fp string) (storage, error) {
	b.mu.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	t := &pgStorage{b: b, ctx: ctx, cancel: cancel}
	if b.conn == nil || b.conn.IsClosed() {
		b.conn = nil
		if err := b.connect(ctx); err != nil {
			t.end()
			return nil, err
		}
	}
	if err := b.conn.Begin(ctx, fp == ""); err != nil {
		err = b.fail("beginning a transaction", err)
		t.end()
		return nil, err
	}
	t.open = true
	if fp != "" {
		if err := checkFingerprint(fp); err != nil {
			t.end()
			return nil, err
		}
		if err := b.conn.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(fp)); err != nil {
			err = b.fail("locking the data set "+short(fp), err)
			t.end()
			return nil, err
		}
	}
	return t, nil
}

// pgStorage is a transaction of a database store.
type pgStorage struct {
	b      *pgBackend
	ctx    context.Context
	cancel context.CancelFunc
	open   bool // a transaction is open
}

func (t *pgStorage) fingerprints() ([]string, error) {
	var fps []string
	err := t.b.conn.Query(t.ctx, `SELECT fingerprint FROM privtrain_budget_entries UNION SELECT fingerprint FROM privtrain_budget_heads ORDER BY 1`, nil,
		func(scan func(...any) error) error {
			var fp string
			err := scan(&fp)
			fps = append(fps, fp)
			return err
		})
	if err != nil {
		return nil, t.b.fail("listing the data sets", err)
	}
	for _, fp := range fps {
		if !isHex64(fp) {
			return nil, fmt.Errorf("budget store %s: a data set named %q, not a fingerprint", t.b.where, fp)
		}
	}
	return fps, nil
}

func (t *pgStorage) load(fp string) ([]byte, []byte, error) {
	var data []byte
	n := 0
	err := t.b.conn.Query(t.ctx, `SELECT line FROM privtrain_budget_entries WHERE fingerprint = $1 ORDER BY seq`, []any{fp},
		func(scan func(...any) error) error {
			var line string
			err := scan(&line)
			data = append(append(data, line...), '\n')
			n++
			return err
		})
	if err != nil {
		return nil, nil, t.b.fail("reading the ledger of "+short(fp), err)
	}
	var h *headRecord
	err = t.b.conn.Query(t.ctx, `SELECT seq, hash, alg, mac FROM privtrain_budget_heads WHERE fingerprint = $1 ORDER BY seq DESC LIMIT 1`, []any{fp},
		func(scan func(...any) error) error {
			h = &headRecord{}
			return scan(&h.Seq, &h.Hash, &h.Alg, &h.Mac)
		})
	if err != nil {
		return nil, nil, t.b.fail("reading the head of "+short(fp), err)
	}
	var head []byte
	if h != nil {
		if head, err = json.Marshal(h); err != nil {
			return nil, nil, err
		}
	}
	if n == 0 {
		return nil, head, fs.ErrNotExist
	}
	return data, head, nil
}

func (t *pgStorage) put(l *ledger, line []byte, seq int, hash string, key []byte) error {
	h := newHead(l.fp, seq, hash, key)
	if err := t.b.conn.Exec(t.ctx, `INSERT INTO privtrain_budget_entries (fingerprint, seq, line) VALUES ($1, $2, $3)`, l.fp, seq, string(bytes.TrimSuffix(line, []byte("\n")))); err != nil {
		return t.b.fail(fmt.Sprintf("appending entry %d of %s", seq, short(l.fp)), err)
	}
	if err := t.b.conn.Exec(t.ctx, `INSERT INTO privtrain_budget_heads (fingerprint, seq, hash, alg, mac) VALUES ($1, $2, $3, $4, $5)`, l.fp, seq, h.Hash, h.Alg, h.Mac); err != nil {
		return t.b.fail(fmt.Sprintf("moving the head of %s", short(l.fp)), err)
	}
	return nil
}

func (t *pgStorage) commit() error {
	t.open = false
	if err := t.b.conn.Commit(t.ctx); err != nil {
		// The outcome is unknown when the connection failed: the retry reads the ledger
		// and finds the entries there or not.
		return t.b.fail("committing", err)
	}
	return nil
}

func (t *pgStorage) end() {
	if t.open && t.b.conn != nil {
		t.open = false
		if err := t.b.conn.Rollback(t.ctx); err != nil {
			t.b.fail("ending a transaction", err)
		}
	}
	t.cancel()
	if t.b != nil {
		b := t.b
		t.b = nil
		b.mu.Unlock()
	}
}

func (t *pgStorage) ledgerName(fp string) string {
	return fmt.Sprintf("(the rows of privtrain_budget_entries of data set %s in %s)", fp, t.b.where)
}

func (t *pgStorage) headName() string { return "the head (privtrain_budget_heads)" }
