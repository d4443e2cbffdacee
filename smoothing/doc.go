// Package smoothing implements Laplacian smoothing, the denoising post-processing of
// DP-LSSGD (Wang, Gu, Boedihardjo, Barekat, Osher): a noisy gradient v is replaced by
// A_σ⁻¹v, where A_σ = I − σL and L is the one-dimensional discrete Laplacian with periodic
// boundary. A_σ⁻¹ averages neighbouring coordinates, preserves the mean and damps the
// high-frequency (noise) components by up to a factor 1 + 4σ.
//
// The operator is applied in O(d) by a cyclic tridiagonal solve (Thomas algorithm plus a
// Sherman–Morrison correction) whose factorisation is computed once per (d, σ):
//
//	s, err := smoothing.NewSolver[float64](d, sigma)
//	err = s.Solve(u, v) // u = A_σ⁻¹ v; u may be v
//
// A network's flat parameter vector is smoothed tensor by tensor, as the authors' code
// does; [NewLaplacian] takes that layout and reuses one solver per distinct length.
// [WholeVector] smooths the whole vector at once, as the paper's theory does:
//
//	lap, err := smoothing.NewLaplacian[float32](sigma, layout)
//	err = lap.Smooth(grad) // in place, no allocation
//
// Which coordinates are neighbours depends on the order a tensor is read in, and that is
// a choice per tensor ([Axes], [Axis]): [Flat], the storage order (row-major, the default
// of NewLaplacian); [Along](k), axis k varying fastest, the whole tensor one periodic
// vector; [Lines](k), each line along axis k its own periodic vector. The authors' code
// smooths every PyTorch tensor as `param.view(-1)`: an nn.Linear weight, stored [out, in],
// along the inputs of each output unit (the units one after the other), a conv weight
// [out, in, kh, kw] in storage order (filter after filter, each over in, kh, kw), a bias
// as a whole. For a weight stored [in, out], as package layers' Dense is, that is
// Along(0), not Flat, which would smooth across the outputs (classes) of one input:
//
//	lap, err := smoothing.NewLaplacian[float64](sigma, layout,
//		smoothing.Axes(smoothing.Along(0), smoothing.Flat())) // dense weight [in, out], bias
//
// nn.Model.SmoothingAxes gives those axes for a model.
//
// [FFTSolver] is a second, independent implementation (A_σ⁻¹v = ifft(fft(v) ./ λ)), kept to
// cross-check the fast solver. [Gamma], [Beta] and [Zeta] are the constants of the paper's
// utility bounds (Propositions 1 and 2).
//
// Smoothing is post-processing: applied to an already-noised gradient it costs no privacy.
// Applied before the noise it would change the sensitivity; callers must add the noise first
// (eq. (5) of the DP-LSSGD paper).
package smoothing
