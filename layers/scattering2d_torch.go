package layers

import (
	_ "embed" // the PyTorch class of the transform
	"fmt"

	"github.com/privtrain/privtrain/scatter"
)

var _ TorchDefiner = Scattering2D{}
var _ TorchParamsExporter = Scattering2D{}

// TorchModule is Scattering2D(J, L, C, H, W), the class of TorchDefinition for input
// [C, H, W]: torch.nn has no scattering transform (Kymatio's is a separate package).
func (l Scattering2D) TorchModule(in []int) (string, error) {
	if _, err := l.OutputShape(in); err != nil {
		return "", err
	}
	return fmt.Sprintf("Scattering2D(%d, %d, %d, %d, %d)", l.J, l.L, in[0], in[1], in[2]), nil
}

// TorchDefinition is the transform as a torch.nn.Module: package scatter's computation
// (reflect padding, products with the filters' real spectra, subsampling by folding the
// spectrum, modulus, low-pass, the border cut off, Kymatio's channel order) written
// operation by operation with torch.fft, in float64, the filters its buffers.
func (Scattering2D) TorchDefinition() string { return torchScattering }

//go:embed scattering2d_torch.py
var torchScattering string

// TorchParams are the module's buffers, the filter bank of scatter.NewBank on the padded
// grid of in, in float64: "psi_r" [(J−r)·L, M/2^r, N/2^r] for r = 0 … max(J−2, 0), the
// wavelets of scales j ≥ r at resolution r (Wavelet.Levels[r], index (j−r)·L + ℓ), and
// "phi_r" [M/2^r, N/2^r] for r = 0 … J−1 (Bank.Phi[r]): every level the transform uses.
func (l Scattering2D) TorchParams(in []int, _ [][]float64) ([]TorchTensor, error) {
	if _, err := l.OutputShape(in); err != nil {
		return nil, err
	}
	s, err := scatter.New(l.J, l.L, in[1], in[2])
	if err != nil {
		return nil, fmt.Errorf("scattering2d: %w", err)
	}
	b := s.Bank
	var ts []TorchTensor
	for r := 0; r < max(l.J-1, 1); r++ {
		m, n := b.M>>r, b.N>>r
		var v []float64
		for _, w := range b.Psi[r*l.L:] {
			v = append(v, w.Levels[r]...)
		}
		ts = append(ts, TorchTensor{Name: fmt.Sprintf("psi_%d", r), Shape: []int{(l.J - r) * l.L, m, n}, Values: v, Float64: true})
	}
	for r, phi := range b.Phi {
		ts = append(ts, TorchTensor{Name: fmt.Sprintf("phi_%d", r), Shape: []int{b.M >> r, b.N >> r}, Values: phi, Float64: true})
	}
	return ts, nil
}
