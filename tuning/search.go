package tuning

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// Trial is one trial of a search, as a Runner is given it.
type Trial struct {
	Index, Of int // 1-based index, and the number of trials drawn
	Config    Config
	// Seed is the trial's seed, drawn from the search's stream; Seeded says whether the
	// search is seeded, and the trial should then seed its training with Seed (e.g.
	// training.TrainerConfig.Seed) so that the search is reproducible.
	Seed   uint64
	Seeded bool
}

// Outcome is what a trial's training gives the search, before the score's noise.
type Outcome struct {
	// Correct is the count of correct predictions on the validation part (sensitivity 1:
	// one example changes it by at most 1), −Inf if the training diverged (a function of
	// the noisy training alone, so scoring it −Inf keeps the score private).
	Correct float64
	// Ledger is the trial's privacy ledger, checked against the search's accounting.
	Ledger *accountant.Ledger
	// Epsilon is the trial's own ε, for reports.
	Epsilon float64
	// Trainer, if not nil, is the trial's trainer: the search takes the checkpoint of
	// each new best trial from it (Result.Checkpoint).
	Trainer *training.Trainer
}

// Runner trains one trial.
type Runner func(ctx context.Context, t Trial) (Outcome, error)

// Scored is a finished trial with its noisy score.
type Scored struct {
	Trial
	// Score is Outcome.Correct plus the Gaussian score noise (−Inf: diverged). Divided by
	// the number of validation examples it is a noisy accuracy.
	Score   float64
	Epsilon float64 // the trial's own ε (Outcome.Epsilon)
}

// Result is a finished search.
type Result struct {
	// Trials is the number of trials drawn. Neither it nor Best.Index is covered by the
	// search's ε: the theorems assume that only the best trial is seen.
	Trials int
	Best   Scored
	// Checkpoint is the best trial's (nil if its Runner gave no Trainer). Its ledger
	// records that trial only: the search's ε is the Accounting's.
	Checkpoint *checkpoint.Training
}

// Search is a private random search, ready to run.
type Search struct {
	Space Space
	// Accounting is the search's privacy (Privacy.At or Privacy.Calibrate): its Trials
	// and ScoreNoise are the search's, and every trial's ledger is checked against its
	// TrialRDP.
	Accounting *Accounting
	// Seed, if not nil, seeds the search's draws (the number of trials, the values, the
	// trials' seeds, the score noise) for a reproducible search; it is not private
	// against anyone who knows it. nil draws them with a secure key.
	Seed *uint64
	// Train trains a trial (Trainers builds a Runner that trains a training.Trainer).
	Train Runner
	// OnDrawn, if set, is called once the number of trials is drawn; OnTrial after each
	// trial is scored. What they receive is for the data holder: the search's ε does not
	// cover publishing it.
	OnDrawn func(trials int)
	OnTrial func(Scored)
}

// NoTrialsError is the end of a search that drew no trial: nothing is released, and the
// search's ε is spent all the same.
type NoTrialsError struct {
	Trials  accountant.Trials
	Epsilon float64 // the search's ε
}

func (e *NoTrialsError) Error() string {
	return fmt.Sprintf("the number of trials drawn is 0 (probability e^−%g under %v): nothing trained, nothing released; the search's ε = %.4g is spent all the same", e.Trials.Mu, e.Trials, e.Epsilon)
}

// AllDivergedError is the end of a search whose every trial diverged: nothing is
// released.
type AllDivergedError struct{ Trials int }

func (e *AllDivergedError) Error() string {
	return fmt.Sprintf("every one of the %d trials diverged: nothing released; try lower lr values", e.Trials)
}

// InterruptedError is the end of a search whose context was done in trial Index of Of:
// nothing is released (the search's ε covers what ran). It unwraps to the context's
// error.
type InterruptedError struct {
	Index, Of int
	Err       error
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("tuning: interrupted in trial %d of %d: %v", e.Index, e.Of, e.Err)
}

func (e *InterruptedError) Unwrap() error { return e.Err }

// Run draws the number of trials K from the Accounting's distribution, runs K trials,
// each with values drawn uniformly from the Space, adds N(0, σ²) to each trial's count of
// correct validation predictions and returns the best. The draws come from
// internal/privrand's tuning stream in this order: K, then for each trial its values
// (one per Param, in the Space's order), its seed, and after its training its score
// noise. A trial's error ends the search and is returned as it is, except that a
// cancelled or expired context gives an *InterruptedError.
func (s *Search) Run(ctx context.Context) (*Result, error) {
	if s.Accounting == nil || s.Train == nil || len(s.Space) == 0 {
		return nil, errors.New("tuning: a Search needs a Space, an Accounting and a Runner")
	}
	for _, p := range s.Space {
		if len(p.Values) == 0 {
			return nil, fmt.Errorf("tuning: %s has no values", p.Name)
		}
	}
	a := s.Accounting
	var src *privrand.Source
	if s.Seed != nil {
		src = privrand.NewSeeded(*s.Seed, privrand.Tuning)
	} else {
		var err error
		if src, err = privrand.NewSecure(privrand.Tuning); err != nil {
			return nil, err
		}
	}
	k := a.Trials.Draw(src.Float64())
	if s.OnDrawn != nil {
		s.OnDrawn(k)
	}
	if k == 0 {
		return nil, &NoTrialsError{Trials: a.Trials, Epsilon: a.Search.Epsilon}
	}
	res := &Result{Trials: k}
	found := false
	for i := 1; i <= k; i++ {
		c := make(Config, len(s.Space))
		for j, p := range s.Space {
			c[j] = p.Values[src.Rand().IntN(len(p.Values))]
		}
		t := Trial{Index: i, Of: k, Config: c, Seed: src.Uint64(), Seeded: s.Seed != nil}
		out, err := s.Train(ctx, t)
		if err == nil && (math.IsInf(out.Correct, 1) || out.Correct < 0 && !math.IsInf(out.Correct, -1)) {
			err = fmt.Errorf("tuning: trial %d: %v correct predictions: want a count ≥ 0, or −Inf for a diverged trial", i, out.Correct)
		}
		if err == nil {
			err = a.CheckLedger(out.Ledger)
		}
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, &InterruptedError{Index: i, Of: k, Err: err}
			}
			return nil, err
		}
		noise := []float64{0}
		src.AddGaussian(noise, a.ScoreNoise)
		sc := Scored{Trial: t, Score: out.Correct, Epsilon: out.Epsilon}
		if math.IsNaN(sc.Score) {
			sc.Score = math.Inf(-1)
		}
		if !math.IsInf(sc.Score, -1) {
			sc.Score += noise[0]
		}
		if s.OnTrial != nil {
			s.OnTrial(sc)
		}
		if !found || sc.Score > res.Best.Score {
			res.Best, found = sc, true
			res.Checkpoint = nil
			if !math.IsInf(sc.Score, -1) && out.Trainer != nil {
				if res.Checkpoint, err = out.Trainer.Checkpoint(); err != nil {
					return nil, err
				}
			}
		}
	}
	if math.IsInf(res.Best.Score, -1) {
		return nil, &AllDivergedError{Trials: k}
	}
	return res, nil
}
