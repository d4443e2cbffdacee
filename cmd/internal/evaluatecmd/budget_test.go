package evaluatecmd

import (
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"os"
	"testing"
)

// TestMain keeps the tests that run the train command off the user's budget store.
func TestMain(m *testing.M) { os.Exit(clitest.RunWithTempBudgetStore(m)) }
