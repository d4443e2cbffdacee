package privacycmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// settingTuneTrial is the setting that train -tune records in the checkpoint of a
// search's best trial (cmd/internal/traincmd): its ledger holds that trial's steps only.
const settingTuneTrial = "tune-trial"

// checkpointInfo is what epsilon -checkpoint reports about the run besides its ε (the
// "checkpoint" object of -json).
type checkpointInfo struct {
	File    string `json:"file"`
	Model   string `json:"model"`
	Dataset string `json:"dataset"`
	// Step and Epoch are the steps and epochs completed on the run's current branch;
	// LineageSteps the steps its lineage took, those that rewinds discarded included:
	// the steps the ledger records (LedgerSteps), which ε covers.
	Step         int                  `json:"step"`
	Epoch        int                  `json:"epoch"`
	LineageSteps int                  `json:"lineage_steps"`
	LedgerSteps  int                  `json:"ledger_steps"`
	RunID        string               `json:"run_id"`
	Rewinds      []checkpoint.Rewind  `json:"rewinds"`
	Ledger       []accountant.Segment `json:"ledger"`
	Noise        string               `json:"noise"`
	Plan         training.Plan        `json:"plan"`
	// TuneTrial is the values of the -tune trial the checkpoint holds (empty for a
	// plain run): then the search's ε, larger, covers the model.
	TuneTrial string `json:"tune_trial,omitempty"`
}

// ledgerFlags are the flags that describe a plan, which -checkpoint replaces.
var ledgerFlags = []string{"n", "batch", "epochs", "q", "steps", "noise"}

// checkpointEpsilon answers epsilon -checkpoint FILE: the ε of the steps the checkpoint's
// ledger records, by the accountants -accountant selects (the ledger's segments replayed
// into the accountant package's ledgers), at the plan's δ unless -delta is given. The RDP
// accountant uses the run's own orders and conversion unless -orders, -max-order or
// -conversion are given.
func checkpointEpsilon(o options, stdout, stderr io.Writer) error {
	for _, f := range ledgerFlags {
		if o.set[f] {
			return exit.Usagef("-%s and -checkpoint both given: -checkpoint takes the plan, its steps and noise from the run's ledger", f)
		}
	}
	c, _, err := o.signing.Load("checkpoint", o.checkpoint)
	if err != nil {
		return err
	}
	if !c.Plan.Private || c.Ledger == nil {
		return exit.Usagef("-checkpoint %s: a run without privacy (no noise, no privacy ledger): no ε bounds what its model reveals", o.checkpoint)
	}
	if !o.set["delta"] {
		o.delta = c.Plan.Delta
	}
	// The plan's flags are the checkpoint's; the accountants' are the command line's,
	// validated by plan() as for a plan given by flags.
	o.q, o.steps, o.noise = c.Plan.SampleRate, max(c.Ledger.Steps(), 1), c.Plan.NoiseMultiplier
	o.set["q"], o.set["steps"], o.set["noise"] = true, true, true
	p, err := o.plan("epsilon")
	if err != nil {
		return err
	}
	p.q, p.n, p.batch, p.steps = c.Plan.SampleRate, c.Plan.DatasetSize, c.Plan.BatchSize, c.Ledger.Steps()
	if c.Ledger.Accountant().Name() == "rdp" && !o.set["orders"] && !o.set["max-order"] && !o.set["conversion"] {
		p.orders, p.conversion = c.Ledger.Orders(), c.Ledger.Conversion() // as train reported it
	}
	history := c.Ledger.History()
	epsilon := func(acct string) (result, error) {
		opts := p.accountantOptions(acct)
		pld, ownPLD := c.Ledger.Accountant().(accountant.PLD)
		if ownPLD = ownPLD && acct == "pld"; ownPLD {
			opts = []accountant.Option{accountant.WithAccountant(pld)} // the run's own discretisation
		}
		l := accountant.NewLedger(opts...)
		for _, s := range history {
			if err := l.Record(s.Q, s.Z, s.Steps); err != nil {
				return result{}, fmt.Errorf("-checkpoint %s: its ledger: %w", o.checkpoint, err)
			}
		}
		spent, err := l.Epsilon(p.delta)
		if err != nil {
			return result{}, err
		}
		r := p.result(acct, c.Plan.NoiseMultiplier, spent)
		if ownPLD {
			r.Description = pld.Description()
			if pld.Discretisation > 0 {
				r.Discretisation = pld.Discretisation
			}
		}
		return r, nil
	}
	var r result
	if p.acct == "both" {
		if r, err = epsilon("rdp"); err != nil {
			return err
		}
		pld, err := epsilon("pld")
		if err != nil {
			return err
		}
		r.PLD = &pld
	} else if r, err = epsilon(p.acct); err != nil {
		return err
	}
	info := &checkpointInfo{
		File: o.checkpoint, Model: c.Model, Dataset: c.Dataset.Name,
		Step: c.Step, Epoch: c.Epoch, LineageSteps: c.LineageSteps(), LedgerSteps: c.Ledger.Steps(),
		RunID: c.RunID, Rewinds: c.Rewinds, Ledger: history, Noise: c.Noise, Plan: c.Plan,
		TuneTrial: c.Settings[settingTuneTrial],
	}
	if info.Rewinds == nil {
		info.Rewinds = []checkpoint.Rewind{}
	}
	if info.TuneTrial != "" {
		fmt.Fprintf(stderr, "privacy: warning: -checkpoint %s holds the best trial (%s) of a train -tune search: its ledger records that trial only; the search's ε, which covers this model, is larger (privacy budget lists it)\n", o.checkpoint, info.TuneTrial)
	}
	if o.json {
		r.Checkpoint = info
		return encodeResult(stdout, r)
	}
	if r.PLD != nil {
		r.writeBoth(stdout, p)
	} else {
		r.writeText(stdout, p)
	}
	info.writeText(stdout)
	return nil
}

// writeText prints the run's lines after the ε and plan lines of writeBoth or writeText.
func (c *checkpointInfo) writeText(w io.Writer) {
	p := c.Plan
	fmt.Fprintf(w, "checkpoint        %s: model %s, data set %s\n", c.File, c.Model, c.Dataset)
	lineage := "no rewinds"
	if len(c.Rewinds) > 0 {
		var rw []string
		for _, r := range c.Rewinds {
			rw = append(rw, fmt.Sprintf("%d→%d", r.From, r.To))
		}
		plural := "s"
		if len(c.Rewinds) == 1 {
			plural = ""
		}
		lineage = fmt.Sprintf("%d rewind%s (%s), whose discarded steps stay in the ledger", len(c.Rewinds), plural, strings.Join(rw, ", "))
	}
	fmt.Fprintf(w, "run               %s: step %d of %d planned (epoch %d of %d); its lineage took %d steps, %s\n",
		c.RunID, c.Step, p.Steps, c.Epoch, p.Epochs, c.LineageSteps, lineage)
	z := fmt.Sprintf("noise multiplier %.5g given", p.NoiseMultiplier)
	if p.Calibrated {
		z = fmt.Sprintf("noise multiplier %.5g calibrated for ε = %g", p.NoiseMultiplier, p.TargetEpsilon)
	} else if p.TargetEpsilon > 0 {
		z += fmt.Sprintf(", budget ε = %g", p.TargetEpsilon)
	}
	if p.NoiseSchedule {
		z += " (scaled per step by the optimizer's noise schedule)"
	}
	fmt.Fprintf(w, "plan              %s sampling q = %.4g (batch %d of %d), %d epochs × %d steps = %d steps; %s, clip %s, δ = %g\n",
		p.Sampling, p.SampleRate, p.BatchSize, p.DatasetSize, p.Epochs, p.StepsPerEpoch, p.Steps, z, p.ClipRule, p.Delta)
	noise := c.Noise
	if strings.HasPrefix(noise, "seeded") {
		noise += ": reproducible, NOT private against anyone who knows the seed"
	}
	fmt.Fprintf(w, "noise             %s\n", noise)
	fmt.Fprintf(w, "covers            the %d steps of this run's ledger (its lineage, resumes and rewinds included); every run on the data set: privacy budget\n", c.LedgerSteps)
}
