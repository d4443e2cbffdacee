package tuning

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/privtrain/privtrain/accountant"
)

// Plan is what one trial's privacy depends on: Poisson sampling of BatchSize of the
// search's trained-on examples per step for Epochs epochs, with noise multiplier
// NoiseMultiplier (0: the search's, given or calibrated).
type Plan struct {
	BatchSize, Epochs int
	NoiseMultiplier   float64
}

// Privacy describes what a search's accounting depends on.
type Privacy struct {
	// Trials is the distribution of the number of trials.
	Trials accountant.Trials
	// Examples is the size n of the trained-on part of the data (after the validation
	// split): a plan samples with q = BatchSize/n for ⌈n/BatchSize⌉·Epochs steps.
	Examples int
	// Plans are the distinct plans of the search's configurations: a trial's RDP is the
	// most over them at every order, so that whichever values a trial draws, it is
	// covered.
	Plans []Plan
	// ScoreNoise is the standard deviation σ of the Gaussian noise on a trial's count of
	// correct validation predictions (sensitivity 1: the score adds α/(2σ²) at order α).
	ScoreNoise float64
	// Delta is the δ of the reported ε, in (0, 1).
	Delta float64
	// Orders are the RDP orders (nil: accountant.OrdersUpTo(256)).
	Orders []float64
}

// Accounting is the privacy of a planned search.
type Accounting struct {
	Privacy
	// NoiseMultiplier is the z of the plans that have none of their own (given to At or
	// calibrated).
	NoiseMultiplier float64
	// TrialRDP is one trial's RDP at Orders, the score included; SearchRDP the whole
	// search's (accountant.TuningRDP of TrialRDP), which composes with the data set's
	// other spending by adding per order.
	TrialRDP, SearchRDP []float64
	// Trial and Search are their ε at Delta (the order that gives each).
	Trial, Search accountant.Spent
	// Training is the ε at Delta of one trial's training alone (the most over the plans,
	// without its noisy score): what a trial's own ledger reports at most.
	Training accountant.Spent
}

// ScoreFloorError is Calibrate's refusal of a budget that the noisy scores alone exceed,
// whatever the training's noise.
type ScoreFloorError struct {
	Budget float64 // the ε asked for
	Floor  float64 // the search's ε from the scores alone (Privacy.ScoreFloor)
}

func (e *ScoreFloorError) Error() string {
	return fmt.Sprintf("tuning: the noisy validation scores alone spend ε = %.4g, at or above the budget ε = %g, however much noise the training takes; raise the budget or the score noise", e.Floor, e.Budget)
}

func (p Privacy) orders() []float64 {
	if p.Orders == nil {
		return accountant.OrdersUpTo(256)
	}
	return p.Orders
}

func (p Privacy) check() error {
	switch {
	case p.Examples < 1:
		return fmt.Errorf("tuning: %d trained-on examples: want ≥ 1", p.Examples)
	case len(p.Plans) == 0:
		return errors.New("tuning: no plans: give the plan of every kind of trial")
	case !(p.ScoreNoise > 0) || math.IsInf(p.ScoreNoise, 0):
		return fmt.Errorf("tuning: score noise σ = %v: want a finite σ > 0", p.ScoreNoise)
	}
	for _, pl := range p.Plans {
		if pl.BatchSize < 1 || pl.BatchSize > p.Examples || pl.Epochs < 1 || pl.NoiseMultiplier < 0 {
			return fmt.Errorf("tuning: plan %+v for %d examples: want 1 ≤ batch ≤ n, epochs ≥ 1, noise multiplier ≥ 0", pl, p.Examples)
		}
	}
	return p.Trials.Check()
}

// scoreRDP is the Gaussian score's RDP at order a: sensitivity 1, noise σ.
func (p Privacy) scoreRDP(a float64) float64 { return a / (2 * p.ScoreNoise * p.ScoreNoise) }

// TrialRDP returns one trial's RDP at the orders: the most over the plans of the
// sampled Gaussian's RDP over the plan's steps, a plan without its own noise multiplier
// at z, plus the score's Gaussian mechanism.
func (p Privacy) TrialRDP(z float64) ([]float64, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.trialRDP(z)
}

func (p Privacy) trialRDP(z float64) ([]float64, error) {
	orders := p.orders()
	n := p.Examples
	out := make([]float64, len(orders))
	for _, pl := range p.Plans {
		if pl.NoiseMultiplier == 0 {
			pl.NoiseMultiplier = z
		}
		steps := accountant.StepsPerEpoch(n, pl.BatchSize) * pl.Epochs
		rdp, err := accountant.SampledGaussianRDP(float64(pl.BatchSize)/float64(n), pl.NoiseMultiplier, orders)
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i] = math.Max(out[i], float64(steps)*rdp[i])
		}
	}
	for i, a := range orders {
		out[i] += p.scoreRDP(a)
	}
	return out, nil
}

func (p Privacy) searchEpsilon(z float64) (accountant.Spent, []float64, error) {
	trial, err := p.trialRDP(z)
	if err != nil {
		return accountant.Spent{}, nil, err
	}
	spent, err := accountant.TuningEpsilon(p.Trials, p.orders(), trial, p.Delta, accountant.Balle)
	return spent, trial, err
}

// ScoreFloor returns the ε that the noisy scores alone spend over the search: the least
// ε of any search with these trials and score noise.
func (p Privacy) ScoreFloor() (accountant.Spent, error) {
	orders := p.orders()
	floor := make([]float64, len(orders))
	for i, a := range orders {
		floor[i] = p.scoreRDP(a)
	}
	return accountant.TuningEpsilon(p.Trials, orders, floor, p.Delta, accountant.Balle)
}

// At returns the accounting of the search with noise multiplier z for the plans without
// their own (z is not read when every plan has one).
func (p Privacy) At(z float64) (*Accounting, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	a := &Accounting{Privacy: p, NoiseMultiplier: z}
	a.Orders = slices.Clone(p.orders())
	a.Plans = slices.Clone(p.Plans)
	var err error
	if a.Search, a.TrialRDP, err = p.searchEpsilon(z); err != nil {
		return nil, err
	}
	if a.SearchRDP, err = accountant.TuningRDP(p.Trials, a.Orders, a.TrialRDP, accountant.Balle); err != nil {
		return nil, err
	}
	if a.Trial, err = accountant.EpsilonFromRDP(a.Orders, a.TrialRDP, p.Delta, accountant.Balle); err != nil {
		return nil, err
	}
	training := make([]float64, len(a.Orders))
	for i, o := range a.Orders {
		training[i] = a.TrialRDP[i] - p.scoreRDP(o)
	}
	if a.Training, err = accountant.EpsilonFromRDP(a.Orders, training, p.Delta, accountant.Balle); err != nil {
		return nil, err
	}
	return a, nil
}

// Calibrate returns the accounting of the search at the least noise multiplier z
// (accountant.Calibrate's) for which the whole search spends at most epsilon at Delta.
// A budget at or below the score's floor (ScoreFloor) is refused with a
// *ScoreFloorError.
func (p Privacy) Calibrate(epsilon float64) (*Accounting, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return nil, fmt.Errorf("tuning: budget ε = %v: want a finite ε > 0", epsilon)
	}
	f, err := p.ScoreFloor()
	if err != nil {
		return nil, err
	}
	if f.Epsilon >= epsilon {
		return nil, &ScoreFloorError{Budget: epsilon, Floor: f.Epsilon}
	}
	z, _, err := accountant.Calibrate(epsilon, func(z float64) (float64, error) {
		spent, _, err := p.searchEpsilon(z)
		return spent.Epsilon, err
	})
	if err != nil {
		return nil, err
	}
	return p.At(z)
}

// CheckLedger refuses a trial whose ledger spent more, at some order of the accounting,
// than the accounting planned for one trial: the search's ε would not cover it.
func (a *Accounting) CheckLedger(l *accountant.Ledger) error {
	if l == nil {
		return errors.New("tune: a trial ran without a ledger")
	}
	planned := make(map[float64]float64, len(a.Orders))
	for i, o := range a.Orders {
		planned[o] = a.TrialRDP[i]
	}
	rdp := l.RDP()
	common := 0
	for i, o := range l.Orders() {
		p, ok := planned[o]
		if !ok {
			continue
		}
		common++
		if rdp[i] > p*(1+1e-9) {
			return fmt.Errorf("tune: a trial's ledger holds RDP %.6g at order %g, above the %.6g the search's ε was computed with (a bug: please report it)", rdp[i], o, p)
		}
	}
	if common == 0 {
		return errors.New("tune: a trial's ledger shares no RDP order with the search's accounting: its spending cannot be checked against the plan")
	}
	return nil
}
