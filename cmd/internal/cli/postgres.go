//go:build postgres

package cli

import (
	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/internal/pgsql"
)

// Built with the tag postgres, the commands open database stores (-budget-store
// postgres://…) with internal/pgsql. It links net and os/user: build with CGO_ENABLED=0
// for a static binary.
func init() { budget.RegisterPostgres(pgsql.Connect) }
