package privacycmd

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/jsonnum"
)

const budgetUsage = `usage: privacy budget [-json] [-store DIR] [-fingerprint F] [-delta D]
       privacy budget -seal [-store DIR] [-fingerprint F]
       privacy budget -migrate-to URL [-store DIR]

Lists the data sets of the budget store and what each has spent: the
composition of every run recorded on it (train, including -validation runs,
audit, erm; resumes count their new steps, forks both branches), as ε at δ.
A data set is its content (a SHA-256 of every example and label), whatever
file or flag it was loaded from; "name" is the data flag of its latest run.
ε is the smaller of two upper bounds when both apply: RDP curves added per
order (Balle et al. conversion) and the PLD of every step; (ε, δ) runs (erm)
add by basic composition; the method column says which. Runs still running,
or killed, count at their planned steps (unsettled).

-fingerprint F (a unique prefix is enough) lists that data set's runs.
Each data set's head (its ledger's last entry and hash) is printed: keep it
elsewhere; a ledger that no longer holds it was rolled back.

The store is verified first: an edited, removed or reordered entry makes the
command fail (exit 1) naming the data set and the entry. -seal keys a data
set's ledger (-fingerprint F; every data set of the store without it) with
PRIVTRAIN_BUDGET_KEY: from then on its entries are HMAC-SHA256-keyed, and
reading or extending it needs the key. See docs/budget.md for what the store
proves and what it cannot.

The store is a directory, or a PostgreSQL database (-store postgres://…, or
$PRIVTRAIN_BUDGET_STORE): one ledger per data set for a team training on
several machines. -migrate-to URL copies every data set of the store (a
directory) into that database, after verifying every ledger; a data set the
database holds with other entries is refused; a second run copies nothing.

Flags:
`

type budgetOptions struct {
	json        bool
	seal        bool
	migrateTo   string
	store       string
	fingerprint string
	delta       float64
}

func runBudget(args []string, stdout, stderr io.Writer) int {
	var o budgetOptions
	fset := flag.NewFlagSet("privacy budget", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	fset.BoolVar(&o.json, "json", false, `print {"store", "datasets":[{"fingerprint","name","runs","epsilon","delta",…,"sealed","head"}]} (with -fingerprint: {"store","dataset","runs"}); ε is null when unbounded`)
	fset.StringVar(&o.store, "store", "", "the budget store `DIR`, or a PostgreSQL URL postgres://… (default: $"+budget.StoreEnv+", else $XDG_DATA_HOME/privtrain/budget, else ~/.local/share/privtrain/budget)")
	fset.StringVar(&o.migrateTo, "migrate-to", "", "copy every data set of the store (-store) into the database store at `URL` (postgres://…), verifying every ledger first; a data set the database holds with other entries is refused (see docs/budget.md)")
	fset.StringVar(&o.fingerprint, "fingerprint", "", "list the runs of the data set whose fingerprint (or its unique prefix) is `F`")
	fset.Float64Var(&o.delta, "delta", 0, "report ε at this δ (default: each data set's smallest δ of its runs, plus the δ of its (ε, δ) runs)")
	fset.BoolVar(&o.seal, "seal", false, "key the ledger of the data set -fingerprint F (a full fingerprint seals a data set the store has not seen yet), or of every data set of the store, with $"+cli.BudgetKeyEnv+": from then on its entries must be keyed, and every run on it needs the key (see docs/budget.md)")
	hint := " (see privacy budget -help)"
	c := cli.Command{Name: "privacy budget", Flags: fset, Header: budgetUsage, ParseHint: hint, Verbatim: true, ArgsHint: hint}
	if code, ok := c.Parse(args, stdout, stderr); !ok {
		return code
	}
	if o.delta != 0 && !(o.delta > 0 && o.delta < 1) {
		fmt.Fprintf(stderr, "privacy budget: -delta %v: want δ in (0, 1)\n", o.delta)
		return exit.Usage
	}
	run := o.list
	if o.seal {
		if o.json || o.delta != 0 {
			fmt.Fprintln(stderr, "privacy budget: -seal lists nothing: -json and -delta do not apply (see privacy budget -help)")
			return exit.Usage
		}
		run = o.sealStore
	}
	if o.migrateTo != "" {
		if o.json || o.delta != 0 || o.seal || o.fingerprint != "" {
			fmt.Fprintln(stderr, "privacy budget: -migrate-to copies the whole store: -json, -delta, -seal and -fingerprint do not apply (see privacy budget -help)")
			return exit.Usage
		}
		if !budget.IsURL(o.migrateTo) {
			fmt.Fprintf(stderr, "privacy budget: -migrate-to %s: want a PostgreSQL URL (postgres://…)\n", o.migrateTo)
			return exit.Usage
		}
		run = o.migrate
	}
	if err := run(stdout); err != nil {
		if errors.Is(err, budget.ErrKeyRequired) {
			err = fmt.Errorf("%w: set %s to the key it was sealed with (%s)", err, cli.BudgetKeyEnv, cli.MigrationHint)
		}
		fmt.Fprintf(stderr, "privacy budget: %s\n", exit.OneLine(err.Error()))
		var ue *exit.UsageError
		if errors.As(err, &ue) {
			return exit.Usage
		}
		return exit.Failure
	}
	return exit.OK
}

func (o *budgetOptions) list(w io.Writer) error {
	dir, err := budget.ResolveDir(o.store)
	if err != nil {
		return exit.Usagef("%v: give -store DIR", err)
	}
	if _, err := os.Stat(dir); !budget.IsURL(dir) && errors.Is(err, fs.ErrNotExist) {
		// Nothing recorded yet: do not create the store just to list it.
		if o.fingerprint != "" {
			return exit.Usagef("-fingerprint %s: the budget store %s does not exist (no run has recorded its spend there)", o.fingerprint, dir)
		}
		if o.json {
			return writeJSON(w, budgetJSON{Store: dir, Datasets: []datasetJSON{}})
		}
		fmt.Fprintf(w, "budget store %s: no data sets (no run has recorded its spend there)\n", dir)
		return nil
	}
	store, err := cli.OpenStore(dir)
	if err != nil {
		return err
	}
	if o.fingerprint != "" {
		return o.listRuns(w, store)
	}
	ds, err := store.Datasets(o.delta)
	if err != nil {
		return err
	}
	if o.json {
		out := budgetJSON{Store: store.Dir(), Keyed: store.Keyed(), Datasets: []datasetJSON{}}
		for _, d := range ds {
			out.Datasets = append(out.Datasets, datasetOf(d))
		}
		return writeJSON(w, out)
	}
	fmt.Fprintf(w, "budget store %s (%s); ε at δ = %s\n", store.Dir(), keyedText(store), deltaText(o.delta))
	if len(ds) == 0 {
		fmt.Fprintln(w, "no data sets")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FINGERPRINT\tNAME\tRUNS\tSTEPS\tε\tδ\tMETHOD\tLAST RUN\tSEALED\tHEAD")
	for _, d := range ds {
		runs := fmt.Sprint(d.Runs)
		if d.Unsettled > 0 {
			runs += fmt.Sprintf(" (%d unsettled)", d.Unsettled)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%g\t%s\t%s\t%s\t%s\n", d.Fingerprint[:16], d.Name, runs, d.Steps, epsText(d.Epsilon), d.Delta, d.Method, d.Last.Local().Format(time.DateTime),
			yesNo(d.Keyed), headText(d.Head))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "HEAD is each ledger's last entry and its hash: keep it elsewhere; a ledger that no longer holds it was rolled back (-fingerprint F prints it whole)")
	return nil
}

// migrate copies the store into the database -migrate-to.
func (o *budgetOptions) migrate(w io.Writer) error {
	src, err := cli.OpenStore(o.store)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := cli.OpenStore(o.migrateTo)
	if err != nil {
		return err
	}
	defer dst.Close()
	ms, err := budget.Migrate(src, dst)
	for _, m := range ms {
		switch {
		case m.Copied == 0:
			fmt.Fprintf(w, "data set %s: held already (%d entries): nothing to copy\n", m.Fingerprint, m.Held)
		case m.Held == 0:
			fmt.Fprintf(w, "data set %s: copied %d entries\n", m.Fingerprint, m.Copied)
		default:
			fmt.Fprintf(w, "data set %s: copied %d entries after the %d the database held\n", m.Fingerprint, m.Copied, m.Held)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "budget store %s: %d data sets migrated into %s; point -budget-store or %s at it\n", src.Dir(), len(ms), dst.Dir(), budget.StoreEnv)
	return nil
}

// sealStore keys the ledger of the data set -fingerprint, or of every data set.
func (o *budgetOptions) sealStore(w io.Writer) error {
	key, err := cli.BudgetKey()
	if err != nil {
		return err
	}
	if key == nil {
		return exit.Usagef("-seal: set %s to the key (at least 16 random bytes; keep it apart from the store): the sealed ledgers are keyed with it", cli.BudgetKeyEnv)
	}
	store, err := cli.OpenStore(o.store)
	if err != nil {
		return err
	}
	fps, err := store.Fingerprints()
	if err != nil {
		return err
	}
	if o.fingerprint != "" {
		var match []string
		for _, f := range fps {
			if strings.HasPrefix(f, strings.ToLower(o.fingerprint)) {
				match = append(match, f)
			}
		}
		switch {
		case len(match) == 1:
		case len(match) > 1:
			return exit.Usagef("-fingerprint %s matches %d data sets: give more digits", o.fingerprint, len(match))
		case len(o.fingerprint) == 64:
			match = []string{strings.ToLower(o.fingerprint)} // a data set with no run yet: all its entries will be keyed
		default:
			return exit.Usagef("-fingerprint %s: no such data set in the store %s (give the full 64 digits to seal one that has no run yet)", o.fingerprint, store.Dir())
		}
		fps = match
	}
	if len(fps) == 0 {
		fmt.Fprintf(w, "budget store %s: no data sets to seal\n", store.Dir())
		return nil
	}
	for _, fp := range fps {
		sealed, err := store.Seal(fp)
		if err != nil {
			if errors.Is(err, budget.ErrTampered) || errors.Is(err, budget.ErrKeyRequired) {
				return err
			}
			return exit.Usagef("-seal %s: %v", fp, err)
		}
		if sealed {
			fmt.Fprintf(w, "data set %s: sealed: its entries are keyed with %s from now on; every run on it needs the key\n", fp, cli.BudgetKeyEnv)
		} else {
			fmt.Fprintf(w, "data set %s: already sealed\n", fp)
		}
	}
	return nil
}

func (o *budgetOptions) listRuns(w io.Writer, store *budget.Store) error {
	d, runs, err := store.Runs(o.fingerprint, o.delta)
	if err != nil {
		if errors.Is(err, budget.ErrTampered) || errors.Is(err, budget.ErrKeyRequired) {
			return err
		}
		return exit.Usagef("-fingerprint %s: %v", o.fingerprint, err)
	}
	if o.json {
		out := budgetRunsJSON{Store: store.Dir(), Keyed: store.Keyed(), Dataset: datasetOf(d), Runs: []budgetRunJSON{}}
		for _, r := range runs {
			out.Runs = append(out.Runs, runOf(r))
		}
		return writeJSON(w, out)
	}
	fmt.Fprintf(w, "data set %s (%s) in %s (%s)\n", d.Fingerprint, d.Name, store.Dir(), keyedText(store))
	fmt.Fprintf(w, "spent ε = %s at δ = %g (%s) by %d runs, %d steps; δ: %s\n", epsText(d.Epsilon), d.Delta, d.Method, d.Runs, d.Steps, deltaText(o.delta))
	fmt.Fprintf(w, "head: entry %d, hash %s, of the ledger whose entry 0 has hash %s (%s)\n", d.Head.Seq, d.Head.Hash, d.Head.Ledger, sealedText(d.Keyed))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTARTED\tTOOL\tLINEAGE\tPARENT\tSTEPS\tε (OWN)\tδ\tSTATUS\tCOMMAND")
	for _, r := range runs {
		status := "settled"
		switch {
		case r.Import:
			status = "imported"
		case !r.Settled:
			status = fmt.Sprintf("unsettled (counted at the %d planned steps)", r.Reserved.Steps())
		}
		parent := "-"
		if r.Parent != nil {
			parent = fmt.Sprintf("%s@%d", abbrev(r.Parent.Run), r.Parent.Step)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%g\t%s\t%s\n", abbrev(r.ID), r.Time.Local().Format(time.DateTime), r.Tool, abbrev(r.Lineage), parent,
			stepsText(r.Spend), epsText(r.Own.Epsilon), r.Own.Delta, status, r.Command)
	}
	return tw.Flush()
}

func abbrev(id string) string {
	if id == "" {
		return "-"
	}
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func stepsText(s budget.Spend) string {
	switch {
	case s.Accountant != "":
		return fmt.Sprint(s.Steps())
	case s.RDP != nil:
		return "RDP curve"
	case s.Approx != nil:
		return fmt.Sprintf("(ε = %g, δ = %g)", s.Approx.Epsilon, s.Approx.Delta)
	}
	return "non-private"
}

func epsText(e float64) string {
	if math.IsInf(e, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.4g", e)
}

func keyedText(s *budget.Store) string {
	if s.Keyed() {
		return "read with " + cli.BudgetKeyEnv + ": sealed ledgers verify under it"
	}
	return cli.BudgetKeyEnv + " not set: sealed ledgers cannot be read; privacy budget -seal keys a ledger against forgery"
}

func sealedText(keyed bool) string {
	if keyed {
		return "sealed: its entries from the seal on are HMAC-SHA256-keyed"
	}
	return "not sealed: its entries are unkeyed; privacy budget -seal keys them"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// headText is a data set's head in the table: its last entry and the first 16 digits of
// its hash.
func headText(h budget.Head) string { return fmt.Sprintf("%d:%s", h.Seq, h.Hash[:16]) }

func deltaText(d float64) string {
	if d == 0 {
		return "each data set's smallest δ of its runs (-delta to choose)"
	}
	return fmt.Sprint(d)
}

// budgetJSON is the -json output of privacy budget.
type budgetJSON struct {
	Store    string        `json:"store"`
	Keyed    bool          `json:"keyed"`
	Datasets []datasetJSON `json:"datasets"`
}

type datasetJSON struct {
	Fingerprint string   `json:"fingerprint"`
	Name        string   `json:"name"`
	Runs        int      `json:"runs"`
	Epsilon     *float64 `json:"epsilon"` // null: unbounded (a non-private run)
	Delta       float64  `json:"delta"`
	Method      string   `json:"method"`
	Unbounded   bool     `json:"unbounded,omitempty"`
	Steps       int      `json:"steps"`
	Unsettled   int      `json:"unsettled_runs"`
	LastRun     string   `json:"last_run"`
	Sealed      bool     `json:"sealed"`
	Head        headJSON `json:"head"`
}

// headJSON is a data set's ledger head: its last entry's position and hash, and the hash
// of its entry 0 (which tells this store's ledger from another's).
type headJSON struct {
	Seq    int    `json:"seq"`
	Hash   string `json:"hash"`
	Ledger string `json:"ledger"`
}

func datasetOf(d budget.Dataset) datasetJSON {
	return datasetJSON{Fingerprint: d.Fingerprint, Name: d.Name, Runs: d.Runs, Epsilon: jsonnum.FiniteOrNil(d.Epsilon), Delta: d.Delta,
		Method: d.Method, Unbounded: math.IsInf(d.Epsilon, 1), Steps: d.Steps, Unsettled: d.Unsettled, LastRun: d.Last.UTC().Format(time.RFC3339),
		Sealed: d.Keyed, Head: headJSON{Seq: d.Head.Seq, Hash: d.Head.Hash, Ledger: d.Head.Ledger}}
}

type budgetRunsJSON struct {
	Store   string          `json:"store"`
	Keyed   bool            `json:"keyed"`
	Dataset datasetJSON     `json:"dataset"`
	Runs    []budgetRunJSON `json:"runs"`
}

type budgetRunJSON struct {
	ID            string         `json:"id"`
	Import        bool           `json:"import"`
	Lineage       string         `json:"lineage,omitempty"`
	Parent        *budget.Parent `json:"parent,omitempty"`
	Tool          string         `json:"tool"`
	Name          string         `json:"name"`
	Command       string         `json:"command"`
	Time          string         `json:"time"`
	Settled       bool           `json:"settled"`
	ReservedSteps int            `json:"reserved_steps"`
	Steps         int            `json:"steps"`
	Epsilon       *float64       `json:"epsilon"` // the run's own, at its δ
	Delta         float64        `json:"delta"`
	Spend         budget.Spend   `json:"spend"`
}

func runOf(r budget.RunRecord) budgetRunJSON {
	return budgetRunJSON{ID: r.ID, Import: r.Import, Lineage: r.Lineage, Parent: r.Parent, Tool: r.Tool, Name: r.Name, Command: r.Command,
		Time: r.Time.UTC().Format(time.RFC3339), Settled: r.Settled, ReservedSteps: r.Reserved.Steps(), Steps: r.Spend.Steps(),
		Epsilon: jsonnum.FiniteOrNil(r.Own.Epsilon), Delta: r.Own.Delta, Spend: r.Spend}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
