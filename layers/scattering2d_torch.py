class Scattering2D(nn.Module):
    """privtrain's layers.Scattering2D: the order-2 wavelet scattering transform with J
    scales and L angles of C x H x W images, computed operation by operation as privtrain's
    package scatter computes it (Kymatio's Scattering2D), in float64:

    1. each channel is reflect-padded (mirror without repeating the edge) to the M x N
       grid, M the next multiple of 2^J above H + 2^J, (M - H) // 2 rows on top;
    2. its 2-D DFT is multiplied by the real spectra of the Morlet wavelets psi (circular
       convolution with fixed filters), the product subsampled to the wavelet's resolution
       by folding the spectrum (the mean of its aliases), and the modulus of the inverse
       DFT taken: U1 = |x * psi_j1,l1|, at resolution j1 (the grid divided by 2^j1);
       U2 = ||x * psi_j1,l1| * psi_j2,l2| for j2 > j1, at resolution j2;
    3. x, U1 and U2 are averaged by the Gaussian low-pass phi the same way, subsampled to
       resolution J, and the border of one coarse pixel is cut off.

    The filters are fixed (not trained) and come from the exported parameter file as
    buffers: psi_r [(J - r) L, M / 2^r, N / 2^r], the spectra of the wavelets of scales
    j >= r periodised to resolution r (psi_0 holds all J L, index j L + l), and phi_r
    [M / 2^r, N / 2^r], the low-pass spectrum at resolution r. Output: [B, C K, H', W'],
    K = 1 + J L + L^2 J (J - 1) / 2 paths per input channel (input channel c is channels
    c K ... c K + K - 1) in Kymatio's order: order 0, order 1 by (j1, l1), order 2 by
    (j1, l1, j2, l2). Like privtrain's front end, forward rounds the features to float32
    and returns them in the input's dtype; features64 returns them unrounded.
    """

    def __init__(self, J, L, C, H, W):
        super().__init__()
        self.J, self.L, self.C, self.H, self.W = J, L, C, H, W
        step = 2 ** J
        self.M, self.N = ((H + step) // step + 1) * step, ((W + step) // step + 1) * step
        self.out_h, self.out_w = self.M // step - 2, self.N // step - 2
        top, left = (self.M - H) // 2, (self.N - W) // 2
        rows = [Scattering2D._reflect(i - top, H) for i in range(self.M)]
        cols = [Scattering2D._reflect(j - left, W) for j in range(self.N)]
        self.register_buffer("rows", torch.tensor(rows, dtype=torch.long), persistent=False)
        self.register_buffer("cols", torch.tensor(cols, dtype=torch.long), persistent=False)
        for r in range(max(J - 1, 1)):
            shape = ((J - r) * L, self.M >> r, self.N >> r)
            self.register_buffer("psi_%d" % r, torch.zeros(shape, dtype=torch.float64))
        for r in range(J):
            self.register_buffer("phi_%d" % r, torch.zeros((self.M >> r, self.N >> r), dtype=torch.float64))

    def extra_repr(self):
        return "J=%d, L=%d, C=%d, H=%d, W=%d" % (self.J, self.L, self.C, self.H, self.W)

    @staticmethod
    def _reflect(i, n):
        """Index i mapped into [0, n) by mirror reflection without repeating the edge
        (numpy's "reflect"), repeatedly for indices more than n away (scatter.Reflect)."""
        period = 2 * (n - 1)
        i %= period
        return period - i if i >= n else i

    @staticmethod
    def _fold(spec, k):
        """The spectrum of the signal subsampled by k on both axes: the mean of the k^2
        aliases of each frequency (Kymatio's subsample_fourier)."""
        if k == 1:
            return spec
        m, n = spec.shape[-2:]
        s = spec.reshape(spec.shape[:-2] + (k, m // k, k, n // k))
        return s.sum(dim=(-4, -2)) / (k * k)

    def _bandpass(self, spec, psi, k):
        """The spectrum of |IDFT(spec psi)| subsampled by k."""
        z = torch.fft.ifft2(Scattering2D._fold(spec * psi, k))
        return torch.fft.fft2(z.abs())

    def _lowpass(self, spec, res):
        """The real part of IDFT(spec phi) at resolution J, without its border."""
        phi = getattr(self, "phi_%d" % res).double()
        z = torch.fft.ifft2(Scattering2D._fold(spec * phi, 2 ** (self.J - res))).real
        return z[..., 1:-1, 1:-1]

    def forward(self, x):
        return self.features64(x).float().to(x.dtype)

    def features64(self, x):
        """The features in float64, before forward rounds them to float32."""
        J, L, B = self.J, self.L, x.shape[0]
        P, h, w = B * self.C, self.out_h, self.out_w
        u = x.reshape(P, self.H, self.W).double()
        u = u[:, self.rows][:, :, self.cols]
        X = torch.fft.fft2(u).unsqueeze(1)  # [P, 1, M, N]
        psi0 = self.psi_0.double()
        order0 = [self._lowpass(X, 0)]
        order1, order2 = [], []
        for j1 in range(J):
            U1 = self._bandpass(X, psi0[j1 * L:(j1 + 1) * L], 2 ** j1)  # [P, L, M / 2^j1, N / 2^j1]
            order1.append(self._lowpass(U1, j1))
            if j1 == J - 1:
                continue
            psi = getattr(self, "psi_%d" % j1).double()
            by_j2 = []
            for j2 in range(j1 + 1, J):
                f = psi[(j2 - j1) * L:(j2 - j1 + 1) * L]
                U2 = self._bandpass(U1.unsqueeze(2), f, 2 ** (j2 - j1))  # [P, L, L, ...]
                by_j2.append(self._lowpass(U2, j2))
            order2.append(torch.cat(by_j2, dim=2).reshape(P, -1, h, w))
        S = torch.cat(order0 + order1 + order2, dim=1)
        return S.reshape(B, -1, h, w)
