// Package erm solves regularised generalised linear models (logistic, ridge
// and SVM) with differential privacy, using the full-batch and coordinate
// methods of three seed papers, and measures their utility as the excess
// empirical risk F(x_priv) − F(x*) against a certified optimum.
//
// A Problem pairs a data.Dataset with a Loss (Logistic, Squared, Hinge) and
// regularisers; FindOptimum returns its non-private minimiser with a
// certificate. Every Solver releases a model and the privacy it spent:
//
//   - pure ε-DP with Laplace noise (Kuru et al., "Differentially private
//     accelerated optimization algorithms"): GD, HeavyBall (DP-SHB), NAG and
//     MASG, whose Optimal variants (DP-NAG-opt, DP-MASG-opt) split the
//     budget by Proposition 4.2 and re-select T by Remark 4.1;
//   - (ε, δ)-DP with Gaussian noise (Wang, Ye and Xu, "Differentially
//     private empirical risk minimization revisited"): SVRG (proximal, L1
//     allowed), SVRGPlusPlus, AccMD (L2-ball constraint, or the L1 ball with
//     AccMD.L1Radius and L1BallOptimum as its reference) and GDPL, with the
//     zCDP calibration for full gradients and the RDP ledger of package
//     accountant for the SVRG family;
//   - (ε, δ)-DP coordinate descent (Damaskinos et al., "Differentially
//     private stochastic coordinate descent"): SCD (dual DP-SCD),
//     SequentialSCD (seqDP-SCD) and PrimalSCD (primalDP-SCD), calibrated by
//     the accountant's subsampled-Gaussian RDP, and SCDBaselineSGD, the
//     paper's DP-SGD baseline under the same calibration.
//
// The mini-batch (ε, δ) methods draw Poisson batches by default, the
// sampling the accountant analyses; Sampling: Shuffled gives the papers'
// fixed-size batches, and for SVRG and SVRGPlusPlus Sampling: One draws
// exactly b uniform examples per inner step (Algorithm 1), with a proven
// add/remove bound (see svrgNoise; cmd/erm's default there). An ε of +Inf turns a solver's noise off, giving its non-private
// counterpart. Noise and sampling come from the *rand.Rand passed to Solve:
// NewSecureNoise for releases, NewNoise(seed) for reproducible experiments.
//
// Where a paper is ambiguous or wrong this package follows the seeds
// digest's reading and says so at the spot: the Laplace scale is b, not a
// standard deviation (the authors' code adds √2 too little noise); heavy
// ball's rate uses the characteristic roots of the appendix; the
// accelerated paper's objective carries λ‖x‖² (so its λ is Lambda/2 here);
// DP-AccMD uses one noisy gradient per iteration in both of its steps; and
// DP-SCD releases v/(λN), never Xα/(λN).
//
// Sensitivities come from the data's DECLARED norm bounds (data.Dataset's
// L2Bound and L1Bound, set by data.Normalize and data.Synthetic), never from
// the data at hand, and step sizes from data-independent smoothness bounds
// unless the caller overrides them.
//
// A typical run:
//
//	ds, _ := data.ReadFile("phishing.txt", data.FormatAuto)
//	_ = ds.BinaryLabels()
//	ds.Normalize()
//	p := &erm.Problem{Data: ds, Loss: erm.Logistic{}, Lambda: 1e-4}
//	noise, _ := erm.NewSecureNoise()
//	res, err := (&erm.SCD{Epsilon: 1, Delta: 1e-3, Epochs: 10, BatchSize: 100, Clip: 1}).Solve(p, noise)
//	opt, _ := erm.FindOptimum(p)
//	fmt.Println(opt.ExcessRisk(p, res.X), res.Epsilon, res.Delta)
package erm
