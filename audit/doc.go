// Package audit checks a private training run's ε empirically, by the one-run membership
// audit of Steinke, Nasr & Jagielski ("Privacy Auditing with One (1) Training Run",
// NeurIPS 2023): m canaries are each included in the training set by an independent fair
// coin, the model is trained once, every canary gets a score, the auditor guesses "in" for
// the highest scores and "out" for the lowest, and the number of correct guesses becomes
// a lower bound on ε that holds with a chosen confidence ([EpsilonLowerBound], the
// paper's Theorem 1). A lower bound above the ε that the accountant reports means the
// mechanism does not deliver its guarantee: a bug in clipping, noise, normalisation or
// accounting.
//
// [Run] audits the project's own mechanism end to end: training.Trainer with its Poisson
// sampler, per-example clipping, dpoptim.Private (noise, normalisation by the expected
// batch) and the accountant's ledger, on logistic regression over MNIST digits. Its
// canaries are white-box gradient canaries realised as training examples: canary i is
// the unit vector of an input coordinate that no real example uses, so its clipped
// gradient lies in its own row of the weight matrix, in a direction fixed by its label,
// with norm C while the row stays near its start (the learning rate is chosen so that
// it does). A white-box auditor sees every update; the default score sums, over the steps,
// the log likelihood ratio of the row's movement along that direction under "sampled"
// versus "not sampled" ([StepLikelihood]); [AccumulatedUpdate] uses the alignment of the
// final minus the initial weights instead, as in the paper's white-box experiments.
//
// [RunMulti] is the multi-run special case of the same theorem: R independent short
// training runs, each with one canary included by a fair coin, so m = R. It exists for a
// bug the one-run audit cannot see, normalisation by the realised batch |B_t| instead of
// the expected q·n: that leaks the batch size, which all canaries of one run share. Each
// run trains the real training.Trainer on a few blank examples plus, by its coin, the canary;
// the score is the likelihood ratio of the batch sizes that the norm of every step's
// update reveals when the normaliser is |B_t| (under the correct mechanism the norm is
// the same in every step) plus the canary row's per-step likelihood ratio.
package audit
