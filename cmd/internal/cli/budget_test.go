package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// Issue 43: a database store that cannot be reached refuses the run before its first
// step with the usage status (2), naming the URL without its password.
func TestOpenStoreUnreachable(t *testing.T) {
	t.Setenv(BudgetKeyEnv, "a budget key of 16+ bytes")
	_, err := OpenStore("postgres://alice:s3cret-pw@127.0.0.1:1/ledger?sslmode=disable")
	var ue *exit.UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("an unreachable database: %v, want a usage error (exit 2)", err)
	}
	if msg := err.Error(); strings.Contains(msg, "s3cret-pw") || !strings.Contains(msg, "postgres://alice@127.0.0.1:1/ledger") {
		t.Errorf("%q: want the URL without its password", msg)
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
