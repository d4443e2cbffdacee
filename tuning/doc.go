// Package tuning is private hyperparameter tuning: the random search of Papernot and
// Steinke ("Hyperparameter Tuning with Renyi Differential Privacy", ICLR 2022) over
// private training runs, with the Rényi DP of the whole search.
//
// A search draws its number of trials K at random (accountant.Trials: truncated negative
// binomial, geometric, logarithmic or Poisson), runs K trials, each with values drawn
// uniformly from a [Space] and trained privately, scores each on a held-out validation
// part by its count of correct predictions plus Gaussian noise (sensitivity 1), and
// releases the best trial. If one trial — its training and its noisy score — is
// (λ, ε(λ))-RDP, the search is RDP with the bound of [accountant.TuningRDP]; that bound
// covers the release of the best trial's model, values and noisy score, the choice among
// the trials included, but not the number of trials drawn nor which trial won.
//
// The steps:
//
//   - [Split] holds out the validation part by a hash of each example's content, so that
//     neighbouring data sets split alike (which the search's privacy needs);
//   - [Privacy] describes a search's plans (batch size, epochs, noise multiplier of each
//     distinct kind of trial) and gives its [Accounting]: at a given noise multiplier
//     ([Privacy.At]) or with the least noise multiplier that meets a budget for the whole
//     search ([Privacy.Calibrate]);
//   - [Search.Run] draws K and the trials' values from the tuning stream of
//     internal/privrand (seeded or secure), runs each trial through a [Runner] — the
//     caller's function, or [Trainers] for a training.Trainer per trial — checks every
//     trial's ledger against the accounting, adds the score noise and keeps the best.
//
// Progress goes through the Search's callbacks; nothing here prints. cmd/train -tune
// (docs/tuning.md) is a thin caller of this package.
package tuning
