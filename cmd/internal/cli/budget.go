package cli

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// CommandLine is the command line recorded in the store: the tool and its arguments,
// each quoted when it holds a space or a quote.
func CommandLine(tool string, args []string) string {
	parts := []string{tool}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// BudgetKeyEnv names the environment variable that holds the budget store's key: the
// HMAC-SHA256 key of sealed data sets' ledgers (privacy budget -seal). It is not the
// checkpoint key (KeyEnv), which signs checkpoints only.
const BudgetKeyEnv = "PRIVTRAIN_BUDGET_KEY"

// BudgetKey returns the key of BudgetKeyEnv, nil when the variable is not set; a key too
// short to be a key is a usage error.
func BudgetKey() ([]byte, error) {
	k, ok := os.LookupEnv(BudgetKeyEnv)
	if !ok {
		return nil, nil
	}
	if len(k) < checkpoint.MinKeyLen {
		return nil, exit.Usagef("%s: a key of %d bytes; use at least %d (random) bytes", BudgetKeyEnv, len(k), checkpoint.MinKeyLen)
	}
	return []byte(k), nil
}

// OpenStore opens the budget store of a command that trains (train, audit, erm): flagDir
// (its -budget-store flag), else $PRIVTRAIN_BUDGET_STORE, else the per-user default;
// with the key of PRIVTRAIN_BUDGET_KEY when it is set (which reads and extends sealed
// data sets; it seals none).
func OpenStore(flagDir string) (*budget.Store, error) {
	key, err := BudgetKey()
	if err != nil {
		return nil, err
	}
	dir, err := budget.ResolveDir(flagDir)
	if err != nil {
		return nil, exit.Usagef("%v: give -budget-store DIR or set %s", err, budget.StoreEnv)
	}
	s, err := budget.Open(dir, key)
	if err != nil {
		return nil, exit.Usagef("-budget-store %s: %v (give another -budget-store DIR or %s)", dir, err, budget.StoreEnv)
	}
	return s, nil
}

// StoreError turns the store's refusals into what a command says: an over-budget plan
// and a store that fails verification are refused with the usage status (2) before the
// first step; the rest are failures.
func StoreError(flagBudget string, store *budget.Store, err error) error {
	var ob *budget.OverBudgetError
	switch {
	case errors.As(err, &ob):
		return exit.Usagef("%s %g: refused before the first step: %v", flagBudget, ob.Budget, err)
	case errors.Is(err, budget.ErrTampered):
		return exit.Usagef("the budget store %s fails verification, so the data set's spend is unknown: %v (nothing was trained; give another -budget-store DIR to start a new store)", store.Dir(), err)
	case errors.Is(err, budget.ErrTooComplex):
		return exit.Usagef("the budget store %s cannot compose the data set's spend: %v (nothing was trained)", store.Dir(), err)
	case errors.Is(err, budget.ErrKeyRequired):
		return exit.Usagef("the budget store %s: %v: the data set's ledger is sealed (keyed); set %s to its key, or give another -budget-store DIR (%s)", store.Dir(), err, BudgetKeyEnv, MigrationHint)
	}
	return fmt.Errorf("the budget store %s: %w", store.Dir(), err)
}

// MigrationHint tells the users of stores keyed before the budget had its own key what
// to do (privacy budget and StoreError say it).
const MigrationHint = "a store keyed by privtrain before " + BudgetKeyEnv + " existed was keyed with " + KeyEnv + ": set " + BudgetKeyEnv + " to that value"

// FormatSpend says a data set's spend: "ε = 1.234 at δ = 1e-05 (pld)".
func FormatSpend(c budget.Composition) string {
	if math.IsInf(c.Epsilon, 1) {
		return "ε = ∞ (a run without a finite guarantee, such as non-private training)"
	}
	if c.Method == "none" {
		return "nothing yet"
	}
	return fmt.Sprintf("ε = %.4g at δ = %g (%s)", c.Epsilon, c.Delta, c.Method)
}
