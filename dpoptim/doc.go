// Package dpoptim holds the update rules of private training and the private step that
// turns a clipped gradient sum into a noisy gradient estimate for them.
//
// A [Rule] is an ordinary first-order optimizer (SGD with optional momentum, Adam, heavy
// ball, Nesterov's accelerated gradient, the ADP-SGD step-size schedules): parameters and a
// gradient estimate in, parameters updated in place, its state kept inside and exposed for
// checkpoints. A [Private] step wraps a rule X into DP-X:
//
//	clipped sum s (sensitivity C, from package clipping)
//	  → s + N(0, (z_t·C)²·I)        Gaussian mechanism; the only place privacy is spent
//	  → ÷ q·n                        the EXPECTED batch size, never the realised one
//	  → A_σ⁻¹ (optional)             Laplacian smoothing, post-processing (DP-LSSGD eq. (5))
//	  → rule X                       post-processing
//
// and records every step's (q, z_t) with a [Recorder] (an *accountant.Ledger) before the
// update is released. z_t = z for all rules except the ADP-SGD ones ([NoiseScaler]), whose
// noise multiplier follows their step size.
//
// Typical use, DP-LSAdam on a model with a per-tensor layout, each tensor smoothed along
// the axis the DP-LSSGD code smooths (nn.Model.SmoothingAxes: dense weights along their
// inputs; smoothing.Axis):
//
//	lap, _ := smoothing.NewLaplacian[float64](1.0, layout, smoothing.Axes(m.SmoothingAxes()...))
//	step, err := dpoptim.NewPrivate(dpoptim.NewAdam(dpoptim.Constant(1e-3)), dpoptim.PrivateConfig{
//		NoiseMultiplier: 1.1, ClipNorm: 1, SampleRate: 256.0 / 60000, DatasetSize: 60000,
//		Recorder: ledger, Smoother: lap,
//	})
//	for each logical batch: err = step.Step(params, clippedSum, batchSize)
//
// The noise comes from a ChaCha8 generator with a secure key unless a seed is given
// ([NewSeededNoise]) and is drawn by internal/privrand (AddGaussian); z is range-checked
// by [CheckNoiseMultiplier] wherever it enters; a seeded run is reproducible, says so ([Noise.String]) and resumes
// bit for bit from [Private.State]. [NonPrivate] applies a rule to the plain mean gradient
// for non-private baselines.
//
// Rules are built as struct literals naming their fields (&dpoptim.HeavyBall{LearningRate:
// lr, Momentum: 0.9}, &dpoptim.ADPPolynomial{Eta: 1, A: 19, C: 1}); [NewSGD] and [NewAdam]
// are shorthands for the schedule-only case. Every zero field means the default its type
// documents (SGD momentum 0 is plain SGD) or is rejected with ErrConfig at the first Step
// (a nil schedule, Adam's β₂ = 0 or ε = 0, ADP-SGD's η = 0): a literal that forgets a
// field never runs a silently different algorithm.
//
// Schedules ([Schedule]) are plain values: [Constant], [StepDecay], [InverseTime],
// [InverseSqrt], [Cosine] (optax's cosine_decay_schedule) and [Warmup], a linear warm-up
// that hands over to another schedule (Warmup{Steps: W, After: Cosine{…}} is optax's
// warmup_cosine_decay_schedule with the decay over the steps after W). A schedule with
// invalid fields is rejected by the rule at its first step (ErrConfig).
//
// Parameter averaging: [EMA] keeps an exponential moving average of the parameters with
// JAX Privacy's warm-up of the decay. It is fed the parameters after each step, which a
// Private step has already released, so it is post-processing; package nn keeps one for
// evaluation and checkpoints (TrainerConfig.Averaging.EMA).
//
// Checkpoints: every Rule and Optimizer exposes its state as a typed [State] (step count,
// named vectors, named scalars; a Private step adds its noise generator's bytes and nests
// the rule's State). Package nn lays a State out as checkpoint tensors.
//
// Adding a rule: a type with its configuration as exported fields (zero values documented
// or rejected in Step), Name, Step (check lengths with checkLengths and the rate with
// rate, leave params unchanged on error), State/SetState (validate with readRuleState,
// listing its vector and scalar names), a `var _ Rule = (*T)(nil)` line in interfaces.go,
// and a case in rules_test.go's ruleCases (state round trip, refusals). If its noise must
// follow its step size, implement [NoiseScaler] too; Private and nn then record and
// calibrate the per-step multiplier without further changes.
//
// Adaptive clipping ([AdaptiveClip], Andrew et al. 2021): with PrivateConfig.Adaptive the
// private step owns the clip norm C_t. The caller clips step t's gradients to
// [Private.ClipNorm] and passes the number of its real examples left unclipped to
// [Private.StepAdaptive]; the step adds N(0, (z_Δ·C_t)²) to the sum and N(0, σ_b²) to the
// centred count from the same Noise generator, records z (not z_Δ) and sets C_{t+1} from the
// noisy count. z_Δ = (z⁻² − (2σ_b)⁻²)^(−½) ([AdaptiveNoiseMultiplier]) makes the pair one
// Gaussian mechanism with multiplier z, so the ledger and the calibration are those of fixed
// clipping. C_t is the scalar "clip" of the Private's State.
//
// Nothing in this package reads an unclipped or un-noised gradient: in particular the
// AdaGrad-norm variant of ADP-SGD updates its step size from the noisy gradient estimate,
// unlike the paper (see [ADPAdaGradNorm]).
package dpoptim
