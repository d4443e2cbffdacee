// Package pgsql is the PostgreSQL client of the budget store's database backend: one
// pgx connection and its current transaction, behind methods of plain types so that
// package budget declares what it needs (budget.SQLConn) without importing pgx. It is
// linked only into builds that ask for it (the commands' build tag postgres, and tests):
// pgx imports net and os/user, which link libc where cgo is enabled, and the default
// build stays static.
package pgsql

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Conn is a connection, with at most one open transaction: Exec and Query run in it
// when one is open.
type Conn struct {
	c  *pgx.Conn
	tx pgx.Tx
}

// CheckURL reports a URL that pgx cannot parse.
func CheckURL(url string) error {
	_, err := pgx.ParseConfig(url)
	return err
}

// Connect connects to url, giving up after timeout when the URL sets no connect_timeout.
func Connect(ctx context.Context, url string, timeout time.Duration) (*Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = timeout
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c}, nil
}

// Begin opens a transaction: read committed, or repeatable read and read-only.
func (c *Conn) Begin(ctx context.Context, readOnly bool) error {
	if c.tx != nil {
		return errors.New("pgsql: a transaction is open already")
	}
	opts := pgx.TxOptions{}
	if readOnly {
		opts = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	}
	tx, err := c.c.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	c.tx = tx
	return nil
}

// Exec runs sql with args.
func (c *Conn) Exec(ctx context.Context, sql string, args ...any) error {
	var err error
	if c.tx != nil {
		_, err = c.tx.Exec(ctx, sql, args...)
	} else {
		_, err = c.c.Exec(ctx, sql, args...)
	}
	return err
}

// Query runs sql with args and calls row for each row with a function that scans it.
func (c *Conn) Query(ctx context.Context, sql string, args []any, row func(scan func(dest ...any) error) error) error {
	var rows pgx.Rows
	var err error
	if c.tx != nil {
		rows, err = c.tx.Query(ctx, sql, args...)
	} else {
		rows, err = c.c.Query(ctx, sql, args...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Commit commits the open transaction.
func (c *Conn) Commit(ctx context.Context) error {
	tx := c.tx
	c.tx = nil
	if tx == nil {
		return errors.New("pgsql: no open transaction")
	}
	return tx.Commit(ctx)
}

// Rollback rolls the open transaction back (none open: nothing to do).
func (c *Conn) Rollback(ctx context.Context) error {
	tx := c.tx
	c.tx = nil
	if tx == nil {
		return nil
	}
	return tx.Rollback(ctx)
}

// Close closes the connection.
func (c *Conn) Close(ctx context.Context) error {
	c.tx = nil
	return c.c.Close(ctx)
}

// IsClosed reports a connection known to be closed.
func (c *Conn) IsClosed() bool { return c.c.IsClosed() }
