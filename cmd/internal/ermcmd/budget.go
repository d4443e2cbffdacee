package ermcmd

import (
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/erm"
)

// ermBudget is what erm needs to record its runs in the budget store.
type ermBudget struct {
	store       string // -budget-store
	command     string
	fingerprint string // of the data as loaded, before normalisation (data.Dataset.Fingerprint)
	desc        string // the data set, for the settled line
	stderr      io.Writer
}

func addBudgetFlag(fs *flag.FlagSet, b *ermBudget) {
	fs.StringVar(&b.store, "budget-store", "", "the budget store (a directory, or a PostgreSQL `URL` postgres://…) where the run records its (ε, δ) on its data set (default: $"+budget.StoreEnv+", else $XDG_DATA_HOME/privtrain/budget, else ~/.local/share/privtrain/budget); see privacy budget")
}

// approxSpend is the store's form of an erm guarantee: (ε, δ), δ = 0 for the pure-ε
// solvers, unbounded with the noise off.
func approxSpend(eps, delta float64) budget.Spend {
	if math.IsInf(eps, 1) {
		return budget.Spend{Unbounded: true}
	}
	return budget.Spend{Approx: &budget.Approx{Epsilon: eps, Delta: delta}}
}

// reserveBudget records the run's (ε, δ) on its data set before the solver runs. Unlike
// train, erm prints the data set's spend once, when the run has settled: a solver that
// refuses its configuration stops with one line.
func (o *trainOptions) reserveBudget(name string) (*budget.Reservation, error) {
	store, err := cli.OpenStore(o.budget.store)
	if err != nil {
		return nil, err
	}
	delta := o.delta
	if solvers[o.solver].pure {
		delta = 0
	}
	run := budget.Run{Tool: "erm", Name: name, Command: o.budget.command, Delta: delta}
	reserve := approxSpend(o.epsilon, delta)
	if o.paperSet {
		// -paper-noise: the printed ε is no bound, and the proven one is known only once
		// the solver has calibrated; reserve without a bound, settle at the proven ε.
		// Refusing to record would leave the data's spend uncounted; recording the printed
		// ε would record a bound that does not hold.
		reserve = approxSpend(math.Inf(1), delta)
	}
	res, err := store.Reserve(o.budget.fingerprint, run, reserve, 0)
	if err != nil {
		err = cli.StoreError("-budget", store, err)
		if ue, ok := err.(*exit.UsageError); ok {
			ue.Msg = "erm: " + ue.Msg
		}
		return nil, err
	}
	o.budget.desc = fmt.Sprintf("data set %s (%s) in %s", o.budget.fingerprint[:12], name, store.Dir())
	return res, nil
}

// settleBudget commits what the solver released: its (ε, δ), or nothing when it refused
// to run (a configuration error before any noise). A solver that failed otherwise stays
// counted at its reservation.
func (o *trainOptions) settleBudget(res *budget.Reservation, r *erm.Result, solveErr error, refused bool) {
	if res == nil || (solveErr != nil && !refused) || (solveErr == nil && r == nil) {
		return
	}
	spend := approxSpend(0, 0)
	if !refused {
		spend = approxSpend(r.Epsilon, r.Delta)
	}
	total, err := res.Commit(spend)
	if o.budget.stderr == nil || (refused && err == nil) {
		return
	}
	if err != nil {
		fmt.Fprintf(o.budget.stderr, "erm: warning: settling the run in the budget store: %s (the store keeps its reservation)\n", exit.OneLine(err.Error()))
		return
	}
	fmt.Fprintf(o.budget.stderr, "budget: %s: spent %s, this run included\n", o.budget.desc, cli.FormatSpend(total))
}
