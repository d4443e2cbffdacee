// Package clipping bounds each example's influence on a gradient sum: per-example gradient
// norms, flat or per-layer clipping, and the clipped sum Σ_i c_i·g_i that a private
// optimizer adds noise to. It is the only place in privtrain where sensitivity is bounded.
//
// Per-example gradients come from one backward pass of the summed loss. For each
// parametrised layer the network hands over a Tap: the layer's input (A for a dense layer,
// the im2col'd input U for a convolution) and the gradient of the summed loss at its
// pre-activation output, dZ. Because example i's loss depends only on row i, dZ_i is
// example i's own gradient there, and its parameter gradient follows in closed form:
//
//	dense:  ∂ℓ_i/∂W = outer(A_i, dZ_i),   ∂ℓ_i/∂b = dZ_i
//	conv:   ∂ℓ_i/∂W = dZ_i · U_i,         ∂ℓ_i/∂b = Σ_positions dZ_i
//
// A Workspace turns the taps into norms and sums with buffers allocated once. Dense layers
// never form per-example gradients: ‖outer(a, dz)‖ = ‖a‖·‖dz‖ and Σ_i c_i·outer(A_i, dZ_i)
// = Aᵀ·diag(c)·dZ is one GEMM. Convolution gradients are formed one chunk of examples at a
// time into per-worker scratch and summed with their factors (one more GEMM per chunk); no
// [B × params] matrix is ever held.
//
// The work runs on all cores: real rows are cut into chunks (ChunkRows) and the chunks into
// at most 16 groups, each group summed into its own partial sum, the partial sums added in
// group order. The partition depends only on the rows, so a sum is bit-for-bit the same
// whatever the number of cores or the schedule (a resumed seeded run equals an
// uninterrupted one). ClippedSumFill and SumFill take a Filler that refreshes the taps chunk
// by chunk just before they are clipped, so that a network's activations are still in
// cache; nn's native engine runs its whole forward and backward pass that way.
//
// Taps come in two layouts: Gorgonia's (conv GradZ channels first, im2col columns in the
// weight's order) and the native engine's NHWC one (Tap.PositionsMajor, with Tap.InOrder
// mapping im2col columns to weight columns). A conv tap may rebuild its patches on demand
// (Tap.Patches) instead of holding In for the whole batch.
//
// Two rules:
//   - Flat{C}: g_i ← g_i·min(1, C/‖g_i‖) over all parameters together; Bound() = C.
//   - PerLayer{C_1…C_L}: each parametrised layer's part (its weight and bias together) is
//     clipped to its own C_l; Bound() = sqrt(Σ_l C_l²).
//
// Bound is the L2 sensitivity to hand to the noise: dpoptim scales its Gaussian noise by
// z·Bound(). Rows marked as padding in the mask are never read and contribute exactly zero,
// so a fixed physical batch can carry a variable (Poisson-sampled) logical batch.
//
// Usage, for taps whose arrays the network refreshes in place before every call:
//
//	ws, err := clipping.NewWorkspace(taps, batch)
//	…
//	stats, err := ws.ClippedSum(mask, clipping.Flat{C: 1}, sum) // sum += Σ c_i g_i
//	// stats.Norms: per-example norms before clipping
//
// nn.Model does this for a whole network (Model.ClippedGradient).
package clipping
