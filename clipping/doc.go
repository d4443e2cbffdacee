// Package clipping bounds each example's influence on a gradient sum: per-example gradient
// norms, flat or per-layer clipping, and the clipped sum Σ_i c_i·g_i that a private
// optimizer adds noise to. It is the only place in privtrain where sensitivity is bounded.
//
// # Layer kinds
//
// Per-example gradients come from one backward pass of the summed loss. Because example
// i's loss depends only on row i, the gradient of the summed loss at a layer's output, row
// i, is example i's own gradient there, and its parameter gradient follows in closed form
// from that and what the layer kept from the forward pass. Each parametrised layer says
// how in one Gradient implementation, its kind, kept by the layer in package layers
// beside it (one file per kind; this package knows none of them):
//
//	Dense (layers/dense_grad.go):   ∂ℓ_i/∂W = outer(A_i, dZ_i),  ∂ℓ_i/∂b = dZ_i
//	Conv2D (layers/conv2d_grad.go): ∂ℓ_i/∂W = dZ_i · U_i,        ∂ℓ_i/∂b = Σ_positions dZ_i
//	GroupNorm (layers/groupnorm_grad.go): ∂ℓ_i/∂γ_c = Σ_positions dY_i·x̂_i,  ∂ℓ_i/∂β_c = Σ_positions dY_i
//
// A kind never has to form a [B × params] matrix: Dense takes the norm ‖a‖·‖dz‖ of
// outer(a, dz) for free and adds Σ_i c_i·outer(A_i, dZ_i) = Aᵀ·diag(c)·dZ with one GEMM. A
// kind that can only form example i's gradient into a buffer implements ExampleKind and is
// wrapped by Formed, which forms one chunk of examples at a time in per-worker scratch,
// takes their norms and adds their clipped sum with one more GEMM; Conv and GroupNorm are
// such kinds. A kind keeps its own layout details (Conv's PositionsMajor, InOrder and
// Patches for the native engine's NHWC layout) and maps its sums to the flat parameter
// layout itself (Gradient.Scatter). The Gorgonia engine gets a kind from a layer's
// layers.Tap through Shape and Bind.
//
// # Workspace
//
// A Workspace schedules the kinds and reduces their results; it knows no kind. The real
// rows are cut into chunks (ChunkRows) and the chunks into at most 16 groups, each group
// summed into its own partial sum, the partial sums added in group order. The partition
// depends only on the rows, so a sum is bit-for-bit the same whatever the number of cores
// or the schedule (a resumed seeded run equals an uninterrupted one). ClippedSumFill and
// SumFill take a Filler that refreshes the layers' buffers chunk by chunk just before they
// are clipped, so that a network's activations are still in cache.
//
// # Groups of rows (augmentation multiplicity)
//
// Workspace.SetGroupSize(k) makes each example k consecutive rows (k augmented views of
// one sampled example, De et al. 2022): example i's gradient is the mean of rows
// i·k…i·k+k−1's gradients, taken before clipping, so a clipped sum's sensitivity is still
// the rule's Bound per example. The Workspace stays kind-agnostic: it wraps every kind so
// that a group's mean is formed in per-worker scratch from the kind's plain Sum over the
// group's rows (group.go) — for Dense one GEMM Aᵀ_group·dZ_group, since a sum of outer
// products is not an outer product and ‖a‖·‖dz‖ no longer gives its norm — then its norm
// is taken and the chunk's clipped sum added with one GEMM, as Formed does. k = 1 leaves
// the kinds unwrapped (Dense's kind keeps its free norm). Masks stay per row; a group is real or
// padding as a whole.
//
// # One native step
//
// nn's native engine runs a DP-SGD step as one pass, data flowing one way:
//
//  1. nn.Model.ClippedGradient hands the batch, the rule and a Filler to
//     Workspace.ClippedSumFill.
//  2. The Workspace cuts the real rows into chunks and groups and, on each worker, for each
//     chunk calls the Filler: nn loads the chunk's rows, runs layers.Native's Forward,
//     forms the loss gradient at the logits, and runs Backward, which writes every
//     parametrised layer's buffers (its Gradient's input and dZ rows) for those rows.
//  3. Each layer's Gradient gives the chunk's per-example squared norms.
//  4. The Rule turns each example's per-layer squared norms into clip factors c_i
//     (min(1, C/‖g_i‖), per layer for PerLayer).
//  5. Each layer's Gradient adds its clipped sum Σ c_i·g_i for the chunk to the group's
//     partial sum.
//  6. The partial sums are added in group order and scattered into the flat gradient.
//  7. dpoptim adds Gaussian noise scaled by z·Rule.Bound() and updates the parameters.
//     With adaptive clipping (training.Privacy.Adaptive) the rule is Flat{C_t} with dpoptim's
//     current C_t, nn counts the unclipped real examples (Examples − Stats.Clipped), and dpoptim
//     scales the noise by z_Δ·C_t and updates C_t from a noisy count.
//
// The only call back against that flow is the native Conv's Patches, which rebuilds a
// chunk's im2col patches from layers.Native's scratch instead of keeping them for the
// whole batch; it belongs to the conv kind, not to the Workspace.
//
// # Rules
//
//   - Flat{C}: g_i ← g_i·min(1, C/‖g_i‖) over all parameters together; Bound() = C.
//   - PerLayer{C_1…C_L}: each parametrised layer's part (its weight and bias together) is
//     clipped to its own C_l; Bound() = sqrt(Σ_l C_l²).
//
// Bound is the L2 sensitivity to hand to the noise: dpoptim scales its Gaussian noise by
// z·Bound(). Rows marked as padding in the mask are never read and contribute exactly zero,
// so a fixed physical batch can carry a variable (Poisson-sampled) logical batch.
//
// Usage, for buffers that the network refreshes in place before every call:
//
//	ws, err := clipping.NewWorkspace([]clipping.Gradient[float32]{dense, conv}, batch)
//	…
//	stats, err := ws.ClippedSum(mask, clipping.Flat{C: 1}, sum) // sum += Σ c_i g_i
//	// stats.Norms: per-example norms before clipping
//
// nn.Model does this for a whole network (Model.ClippedGradient).
package clipping
