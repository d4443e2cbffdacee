package evaluatecmd

import (
	"fmt"
	"os"
	"testing"

	"github.com/privtrain/privtrain/budget"
)

// TestMain keeps the tests that run the train command off the user's budget store.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "evaluatecmd-budget-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(budget.StoreEnv, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
