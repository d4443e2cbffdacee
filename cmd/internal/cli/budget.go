package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
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

// OpenStore opens the budget store of a command that trains (train, audit, erm): flagDir
// (its -budget-store flag), else $PRIVTRAIN_BUDGET_STORE, else the per-user default;
// keyed with PRIVTRAIN_CHECKPOINT_KEY when it is set.
func OpenStore(flagDir string) (*budget.Store, error) {
	key, err := CheckpointKey()
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
	case errors.Is(err, budget.ErrKeyRequired):
		return exit.Usagef("the budget store %s: %v: set %s to its key, or give another -budget-store DIR", store.Dir(), err, KeyEnv)
	}
	return fmt.Errorf("the budget store %s: %w", store.Dir(), err)
}

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
