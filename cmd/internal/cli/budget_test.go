package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/pgsql"
)

// Issue 43: a database store that cannot be reached refuses the run before its first
// step with the usage status (2), naming the URL without its password; so does a build
// without the PostgreSQL client (no tag postgres), saying how to build one.
func TestOpenStoreUnreachable(t *testing.T) {
	t.Setenv(BudgetKeyEnv, "a budget key of 16+ bytes")
	const url = "postgres://alice:s3cret-pw@127.0.0.1:1/ledger?sslmode=disable"
	for _, client := range []bool{false, true} {
		if client {
			budget.RegisterPostgres(pgsql.Connect)
		} else {
			budget.RegisterPostgres[budget.SQLConn](nil)
		}
		_, err := OpenStore(url)
		var ue *exit.UsageError
		if !errors.As(err, &ue) {
			t.Fatalf("client %v: an unreachable database: %v, want a usage error (exit 2)", client, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "s3cret-pw") || !strings.Contains(msg, "postgres://alice@127.0.0.1:1/ledger") {
			t.Errorf("client %v: %q: want the URL without its password", client, msg)
		}
		if !client && !strings.Contains(msg, "-tags postgres") {
			t.Errorf("without a client: %q: want how to build one", msg)
		}
	}
}

// The command line recorded in the store never holds a database password.
func TestCommandLineRedactsURL(t *testing.T) {
	got := CommandLine("train", []string{"-budget-store", "postgres://alice:pw1@db/l", "-budget-store=postgresql://bob:pw2@db/l?password=pw3", "-epochs", "2"})
	want := "train -budget-store postgres://alice@db/l -budget-store=postgresql://bob@db/l -epochs 2"
	if got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
