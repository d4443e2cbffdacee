package traincmd

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// budgetFlags are -budget and -budget-store, and the command line the store records.
type budgetFlags struct {
	eps     float64
	store   string
	command string
}

func addBudgetFlags(fs *flag.FlagSet, b *budgetFlags) {
	fs.Float64Var(&b.eps, "budget", 0, "refuse, before the first step and with exit status 2, a run whose planned spend would take its data set's ε past `EPS`: the composition of every run recorded in the budget store on the same data (same content fingerprint), at the smallest δ of its runs (0: no limit; every run is recorded all the same). -epsilon still sets this run's own ε")
	fs.StringVar(&b.store, "budget-store", "", "the budget store where every run records its spend on its data set: a directory, or a PostgreSQL `URL` postgres://… shared by a team (default: $"+budget.StoreEnv+", else $XDG_DATA_HOME/privtrain/budget, else ~/.local/share/privtrain/budget); see privacy budget")
}

// runBudget is a run's reservation in the budget store.
type runBudget struct {
	res        *budget.Reservation
	acct       string
	base       int // the ledger's steps when the run reserved (the lineage before it)
	private    bool
	stderr     io.Writer
	name, desc string
	start      string        // the line report prints
	search     *budget.Spend // a -tune search's spend (settleSearch)
	// settled is the data set's spend once the run settled (nil before, or when
	// settling failed), for the summary.
	settled *budget.Composition
}

// reserveBudget records the run's planned spend in the budget store before its first
// step (report prints the data set's spend so far and with this run's plan). A resumed run
// reserves its new steps only (the checkpoint's ledger holds the older ones, recorded by
// the run that took them, or imported now when the store has not seen them). cks are the
// checkpoints read (the one resumed first; nil entries are skipped): the ledger heads they
// recorded are witnesses that the store must still hold (a rollback is refused).
func reserveBudget(o *options, t *training.Trainer, cks []*checkpoint.Training, fp string, rule dpoptim.Rule, stderr io.Writer) (*runBudget, error) {
	ck := cks[0]
	store, err := cli.OpenStore(o.budget.store)
	if err != nil {
		return nil, err
	}
	p := t.Plan()
	name := o.dataset
	if o.data != "" {
		name += " " + o.data
	}
	rb := &runBudget{acct: o.accountant, private: p.Private, stderr: stderr, name: name}
	// The run's budget lines are by its own accountant, as its plan and summary are.
	run := budget.Run{Lineage: t.RunID(), Tool: "train", Name: name, Command: o.budget.command, Delta: p.Delta, Accountant: o.accountant}
	var planned budget.Spend
	if p.Private {
		rb.base = t.Ledger().Steps()
		scaler, _ := rule.(dpoptim.NoiseScaler)
		l := accountant.NewLedger()
		for step := t.Steps(); step < p.Steps; step++ {
			if err := l.Record(p.SampleRate, dpoptim.StepMultiplier(p.NoiseMultiplier, scaler, step), 1); err != nil {
				return nil, err
			}
		}
		planned = budget.SegmentSpend(o.accountant, l.History())
	} else {
		planned = budget.Spend{Unbounded: true}
	}
	if ck != nil {
		run.Parent = &budget.Parent{Run: ck.RunID, Step: ck.Step, Steps: ck.LineageSteps()}
		inherited := budget.Spend{Unbounded: true}
		if p.Private {
			inherited = budget.SegmentSpend(o.accountant, t.Ledger().History())
		}
		run.Inherited = &inherited
	}
	for _, c := range cks {
		if c != nil && c.BudgetHead != nil {
			h := c.BudgetHead
			run.Witnesses = append(run.Witnesses, budget.Head{Fingerprint: h.Fingerprint, Ledger: h.Ledger, Seq: h.Seq, Hash: h.Hash})
		}
	}
	res, err := store.Reserve(fp, run, planned, o.budget.eps)
	if err != nil {
		return nil, cli.StoreError("-budget", store, err)
	}
	rb.res = res
	rb.desc = fmt.Sprintf("data set %s (%s)", fp[:12], name)
	rb.start = fmt.Sprintf("budget: %s in %s: spent %s; with this run's plan %s\n", rb.desc, store.Dir(), cli.FormatSpend(res.Before), cli.FormatSpend(res.After))
	return rb, nil
}

// head is the data set's ledger head after the run's latest entry in the budget store,
// which every checkpoint the run writes records (nil without a reservation).
func (rb *runBudget) head() *checkpoint.BudgetHead {
	if rb == nil || rb.res == nil {
		return nil
	}
	h := rb.res.Head()
	return &checkpoint.BudgetHead{Fingerprint: h.Fingerprint, Ledger: h.Ledger, Seq: h.Seq, Hash: h.Hash}
}

// report prints the data set's spend before the run and with its plan (after the run's
// header).
func (rb *runBudget) report() {
	if rb != nil {
		fmt.Fprint(rb.stderr, rb.start)
	}
}

// settle commits what the run spent (the steps its ledger recorded after the
// reservation, however it stopped) and prints the data set's settled total. A failure
// leaves the reservation, which over-counts: a warning, not an error.
func (rb *runBudget) settle(t *training.Trainer) {
	if rb == nil || rb.res == nil {
		return
	}
	actual := budget.Spend{Unbounded: true}
	if rb.private && t.Ledger() != nil {
		actual = budget.SegmentSpend(rb.acct, dropSteps(t.Ledger().History(), rb.base))
	}
	total, err := rb.res.Commit(actual)
	if err != nil {
		fmt.Fprintf(rb.stderr, "train: warning: settling the run in the budget store: %s (the store keeps this run's planned spend)\n", exit.OneLine(err.Error()))
		return
	}
	rb.settled = &total
	fmt.Fprintf(rb.stderr, "budget: %s: settled at %s\n", rb.desc, cli.FormatSpend(total))
}

// datasetSpend is the summary's record of the data set's spend: the composition of every
// run recorded on it, this one included, as the run settled it (nil when it did not).
type datasetSpend struct {
	Fingerprint string   `json:"fingerprint"`
	Epsilon     *float64 `json:"epsilon"` // null: unbounded
	Delta       float64  `json:"delta"`
	Method      string   `json:"method"`
}

func (rb *runBudget) datasetSpend() *datasetSpend {
	if rb == nil || rb.settled == nil {
		return nil
	}
	c := *rb.settled
	var eps *float64
	if !math.IsInf(c.Epsilon, 1) {
		eps = &c.Epsilon
	}
	return &datasetSpend{Fingerprint: rb.res.Fingerprint, Epsilon: eps, Delta: c.Delta, Method: c.Method}
}

// dropSteps returns history without its first n steps.
func dropSteps(history []accountant.Segment, n int) []accountant.Segment {
	var out []accountant.Segment
	for _, s := range history {
		if n >= s.Steps {
			n -= s.Steps
			continue
		}
		s.Steps -= n
		n = 0
		out = append(out, s)
	}
	return out
}

// reserveSearch records a -tune search in the budget store before its first trial: its
// RDP curve (Papernot & Steinke 2022), which covers every trial, the scores and the
// choice of the best, on the whole training set the search splits. -budget refuses a
// search that would take the data set past it.
func reserveSearch(o *options, fp string, sp TuneSpend, stderr io.Writer) (*runBudget, error) {
	store, err := cli.OpenStore(o.budget.store)
	if err != nil {
		return nil, err
	}
	name := o.dataset
	if o.data != "" {
		name += " " + o.data
	}
	spend := searchSpend(sp)
	run := budget.Run{Tool: "train -tune", Name: name, Command: o.budget.command, Delta: sp.Delta}
	res, err := store.Reserve(fp, run, spend, o.budget.eps)
	if err != nil {
		return nil, cli.StoreError("-budget", store, err)
	}
	rb := &runBudget{res: res, stderr: stderr, name: name, desc: fmt.Sprintf("data set %s (%s)", fp[:12], name), search: &spend}
	fmt.Fprintf(stderr, "budget: %s in %s: spent %s; with this search %s\n", rb.desc, store.Dir(), cli.FormatSpend(res.Before), cli.FormatSpend(res.After))
	return rb, nil
}

// settleSearch settles a search at its reserved spend: the bound holds for the whole
// search however many trials ran, and a search that stopped early keeps it.
func (rb *runBudget) settleSearch() {
	if rb == nil || rb.search == nil {
		return
	}
	total, err := rb.res.Commit(*rb.search)
	if err != nil {
		fmt.Fprintf(rb.stderr, "train: warning: settling the search in the budget store: %s (the store keeps its reservation)\n", exit.OneLine(err.Error()))
		return
	}
	fmt.Fprintf(rb.stderr, "budget: %s: settled at %s\n", rb.desc, cli.FormatSpend(total))
}

// searchSpend is a search's RDP curve in the store's form: its orders ascending, those
// where the bound is infinite left out (a curve at fewer orders is still a bound);
// unbounded when none is finite.
func searchSpend(sp TuneSpend) budget.Spend {
	type point struct{ a, r float64 }
	var pts []point
	for i, a := range sp.Orders {
		if i < len(sp.RDP) && sp.RDP[i] >= 0 && !math.IsInf(sp.RDP[i], 1) {
			pts = append(pts, point{a, sp.RDP[i]})
		}
	}
	if len(pts) == 0 {
		return budget.Spend{Unbounded: true}
	}
	slices.SortFunc(pts, func(x, y point) int { return cmp.Compare(x.a, y.a) })
	c := &budget.Curve{}
	for i, p := range pts {
		if i > 0 && p.a == pts[i-1].a {
			continue
		}
		c.Orders, c.Values = append(c.Orders, p.a), append(c.Values, p.r)
	}
	return budget.Spend{RDP: c}
}
