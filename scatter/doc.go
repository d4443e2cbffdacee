// Package scatter computes the 2-D wavelet scattering transform of order 2 (Bruna &
// Mallat, "Invariant Scattering Convolution Networks", IEEE PAMI 2013) with the Morlet
// filter bank of the Kymatio library, the fixed feature extractor of Tramèr & Boneh,
// "Differentially Private Learning Needs Better Features (or Much More Data)", ICLR 2021.
//
// For J scales and L angles each input channel becomes Channels(J, L) = 1 + J·L +
// L²·J(J−1)/2 maps of size H/2^J × W/2^J: the image averaged by a Gaussian low-pass φ
// (order 0), |x ⋆ ψ_{j1,ℓ1}| ⋆ φ (order 1, J·L paths) and ||x ⋆ ψ_{j1,ℓ1}| ⋆ ψ_{j2,ℓ2}| ⋆ φ
// for j2 > j1 (order 2), subsampled by 2^J. J = 2, L = 8 gives 81 channels of 7×7 for a
// 28×28 image and 3·81 = 243 channels of 8×8 for a 3×32×32 one.
//
// The computation follows Kymatio's Scattering2D (kymatio/scattering2d: filter_bank.py,
// core/scattering2d.py): the image is reflect-padded to a multiple of 2^J with at least
// 2^J pixels each side; wavelets ψ_{j,ℓ} are Morlets with σ = 0.8·2^j, central frequency
// 3π/4·2^−j, angle (L/2−1−ℓ)π/L and slant 4/L, φ a Gaussian with σ = 0.8·2^(J−1), all
// periodised on the padded grid and applied as real spectra; convolutions are products of
// FFTs (a mixed-radix FFT of our own, rows then columns; gonum's FFTPACK port took 2.7
// times as long), subsampling is the periodisation of the spectrum, and the border of one
// coarse pixel is cut off at the end. Channels come in
// Kymatio's order: order 0, order 1 by (j1, ℓ1), order 2 by (j1, ℓ1, j2, ℓ2); input channel
// c occupies channels c·K … c·K+K−1, as T&B's reshape of Kymatio's (B, C, K, h, w) output.
// Results agree with a direct spatial-convolution implementation to 1e-14.
//
// The transform has no parameters and does not look at the data, so it costs no privacy:
// under differential privacy only what is trained on its output is charged. It is also
// the same in every step, so compute it once per dataset rather than in the training
// graph:
//
//	train, _ := scatter.Cache(fashionTrain, 2, 8) // 60,000 × 81×7×7 float32, in parallel
//	test, _ := scatter.Cache(fashionTest, 2, 8)
//	// train and test are datasets.Dataset: train a model whose input shape is [81 7 7]
//	// (T&B: GroupNorm without affine parameters, then a linear layer or a small CNN).
//
// New builds a reusable Scattering for one image size; its Transform maps a batch of
// C×H×W images to features on GOMAXPROCS goroutines, deterministically. layers.Scattering2D
// is the same transform as a network layer, for describing models and as a reference.
package scatter
