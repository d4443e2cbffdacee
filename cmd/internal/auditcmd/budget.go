package auditcmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/audit"
	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
)

func addBudgetFlag(fs *flag.FlagSet, dir *string) {
	fs.StringVar(dir, "budget-store", "", "one-run: the budget store `DIR` where the audit records its spend on its real digits (default: $"+budget.StoreEnv+", else $XDG_DATA_HOME/privtrain/budget, else ~/.local/share/privtrain/budget; multi-run trains on blank filler and canaries only and records nothing); see privacy budget")
}

// auditBudget is a one-run audit's reservation in the budget store.
type auditBudget struct {
	res    *budget.Reservation
	desc   string
	stderr io.Writer
}

// reserveBudget records a one-run audit in the budget store before it trains. The private
// data are its real digits (the canaries are synthetic): the audit is handed them here,
// as it would load them itself, and its spend is recorded under the fingerprint of the
// whole embedded MNIST training sample it draws them from (a subset's privacy is spent on
// the data set it was drawn from). The data set's spend is printed once, when the audit has settled (an audit refused
// for its configuration stops with one line). The plan depends on how many canaries the coins include, so the reservation is an
// upper bound: (ε, δ) = (-epsilon, -delta) when the noise is calibrated for -epsilon;
// with -noise, the subsampled Gaussian at the largest sampling rate and step count any
// coin outcome gives (the RDP of that mechanism grows with both).
func (o *options) reserveBudget(command string, stderr io.Writer) (*auditBudget, error) {
	c := &o.cfg
	charged := c.Real // the data set the spend is charged to
	if c.Real == nil {
		train, _, err := mnist.Embedded()
		if err != nil {
			return nil, err
		}
		if c.Real, err = datasets.StratifiedSubset(train, c.RealExamples); err != nil {
			return nil, exit.Usagef("-real %d: %v", c.RealExamples, err)
		}
		// The audit trains on a subset of the embedded training sample: its spend is on
		// that whole sample (what train -dataset mnist records under), so that it
		// composes with every other run on it.
		charged = train
	}
	store, err := cli.OpenStore(o.budgetStore)
	if err != nil {
		return nil, err
	}
	fp := datasets.ContentFingerprint(charged)
	realN := c.Real.Len()
	var planned budget.Spend
	if c.NoiseMultiplier == 0 {
		planned = budget.Spend{Approx: &budget.Approx{Epsilon: c.Epsilon, Delta: c.Delta}}
	} else {
		maxN := realN + c.Canaries
		var q float64
		var bMin int
		if c.BatchSize > 0 {
			q, bMin = min(1, float64(c.BatchSize)/float64(realN)), c.BatchSize
		} else { // b = max(1, n/10)
			q, bMin = min(1, max(0.1, 1/float64(realN))), max(1, realN/10)
		}
		steps := c.Epochs * ((maxN + bMin - 1) / bMin)
		planned = budget.SegmentSpend("rdp", []accountant.Segment{{Q: q, Z: c.NoiseMultiplier, Steps: steps}})
	}
	name := fmt.Sprintf("mnist-embedded -real %d", c.RealExamples)
	res, err := store.Reserve(fp, budget.Run{Tool: "audit", Name: name, Command: command, Delta: c.Delta}, planned, 0)
	if err != nil {
		return nil, cli.StoreError("-budget", store, err)
	}
	desc := fmt.Sprintf("data set %s (%s) in %s", fp[:12], name, store.Dir())
	return &auditBudget{res: res, desc: desc, stderr: stderr}, nil
}

// settle commits the steps the audit ran; an audit refused before training commits
// none; one that stopped otherwise (interrupted) stays counted at its reservation.
func (b *auditBudget) settle(r audit.Result, runErr error) {
	if b == nil {
		return
	}
	var spend budget.Spend
	switch {
	case runErr == nil && r.Steps > 0 && r.NoiseMultiplier > 0 && !math.IsInf(r.NoiseMultiplier, 0):
		spend = budget.SegmentSpend("rdp", []accountant.Segment{{Q: r.SampleRate, Z: r.NoiseMultiplier, Steps: r.Steps}})
	case errors.Is(runErr, audit.ErrConfig):
		spend = budget.SegmentSpend("rdp", nil)
	default:
		return
	}
	total, err := b.res.Commit(spend)
	if err == nil && runErr != nil {
		return
	}
	if err != nil {
		fmt.Fprintf(b.stderr, "audit: warning: settling the run in the budget store: %s (the store keeps its reservation)\n", exit.OneLine(err.Error()))
		return
	}
	fmt.Fprintf(b.stderr, "budget: %s: spent %s, this audit included\n", b.desc, cli.FormatSpend(total))
}
