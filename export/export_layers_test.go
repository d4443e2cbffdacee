package export_test

import (
	"bytes"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/export"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

// exportNormSpec has the normalisation and pooling layers; in PyTorch it is
//
//	Sequential(Conv2d(2, 4, 3, padding=1), GroupNorm(2, 4), ReLU(),
//	           AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
//	           GroupNorm(4, 4, affine=False), AdaptiveAvgPool2d(1), Flatten(), Linear(4, 3))
func exportNormSpec() nn.Spec {
	return nn.Spec{Name: "export-norm", InputShape: []int{2, 6, 6}, NumClasses: 3, Layers: []layers.Layer{
		layers.Conv2D{Filters: 4, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}},
		layers.GroupNorm{Groups: 2},
		layers.ReLU{},
		layers.AvgPool2D{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}},
		layers.GroupNorm{Groups: 4, NoAffine: true},
		layers.GlobalAvgPool2D{},
		layers.Flatten{},
		layers.Dense{Units: 3},
	}}
}

// exportNormModules is exportNormSpec's Sequential as PyTorch source, written from
// PyTorch's constructors' signatures.
var exportNormModules = []string{
	"nn.Conv2d(2, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=True)",
	"nn.GroupNorm(2, 4, eps=1e-05, affine=True)",
	"nn.ReLU()",
	"nn.AvgPool2d(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), count_include_pad=False)",
	"nn.GroupNorm(4, 4, eps=1e-05, affine=False)",
	"nn.AdaptiveAvgPool2d(1)",
	"nn.Flatten()",
	"nn.Linear(4, 3, bias=True)",
}

// torchNormForward is PyTorch's forward pass of exportNormSpec's Sequential on one CHW
// example, by brute force from the exported tensors and the modules' definitions in
// PyTorch's documentation.
func torchNormForward(x []float64, st map[string]*stTensor) []float64 {
	const C, F, H, W = 2, 4, 6, 6
	// Conv2d(2, 4, 3, padding=1): 4×6×6.
	w, b := st["0.weight"].values, st["0.bias"].values
	y := make([]float64, F*H*W)
	for o := range F {
		for r := range H {
			for q := range W {
				s := b[o]
				for c := range C {
					for i := range 3 {
						for j := range 3 {
							if rr, qq := r+i-1, q+j-1; rr >= 0 && rr < H && qq >= 0 && qq < W {
								s += w[((o*C+c)*3+i)*3+j] * x[(c*H+rr)*W+qq]
							}
						}
					}
				}
				y[(o*H+r)*W+q] = s
			}
		}
	}
	// GroupNorm(groups, F): each group's mean and biased variance, (v − μ)/sqrt(σ² + 1e-5),
	// then γ_c·x̂ + β_c per channel when affine.
	groupNorm := func(v []float64, groups, hw int, gamma, beta []float64) {
		per := F / groups * hw
		for g := range groups {
			part := v[g*per : (g+1)*per]
			var mean, vr float64
			for _, a := range part {
				mean += a
			}
			mean /= float64(per)
			for _, a := range part {
				vr += (a - mean) * (a - mean)
			}
			vr /= float64(per)
			for k := range part {
				part[k] = (part[k] - mean) / math.Sqrt(vr+1e-5)
				if gamma != nil {
					c := (g*per + k) / hw
					part[k] = gamma[c]*part[k] + beta[c]
				}
			}
		}
	}
	groupNorm(y, 2, H*W, st["1.weight"].values, st["1.bias"].values)
	for k := range y {
		y[k] = max(y[k], 0)
	}
	// AvgPool2d(3, stride 2, padding 1, count_include_pad=False): 4×3×3, each window's
	// mean over its cells inside the image.
	p := make([]float64, F*3*3)
	for c := range F {
		for r := range 3 {
			for q := range 3 {
				var s float64
				n := 0
				for i := range 3 {
					for j := range 3 {
						if rr, qq := 2*r+i-1, 2*q+j-1; rr >= 0 && rr < H && qq >= 0 && qq < W {
							s += y[(c*H+rr)*W+qq]
							n++
						}
					}
				}
				p[(c*3+r)*3+q] = s / float64(n)
			}
		}
	}
	groupNorm(p, 4, 9, nil, nil)
	// AdaptiveAvgPool2d(1), Flatten: each channel's mean.
	feat := make([]float64, F)
	for c := range F {
		for _, v := range p[c*9 : (c+1)*9] {
			feat[c] += v / 9
		}
	}
	lw, lb := st["7.weight"].values, st["7.bias"].values // [3, 4]
	out := make([]float64, 3)
	for o := range 3 {
		out[o] = lb[o]
		for i := range F {
			out[o] += lw[o*F+i] * feat[i]
		}
	}
	return out
}

// TestExportTorchNormPool exports a network with GroupNorm (with and without affine),
// AvgPool2D and GlobalAvgPool2D and checks the module source against PyTorch's modules,
// the tensors against our flat layout (γ and β as they are, the Linear weight
// transposed), and PyTorch's forward pass with them against our logits.
func TestExportTorchNormPool(t *testing.T) {
	for _, dt := range []nn.DType{nn.Float64, nn.Float32} {
		m := newModel(t, exportNormSpec(), 3, nn.WithDType(dt))
		theta := make([]float64, m.NumParams())
		for j := range theta {
			theta[j] = float64(j%11-5) / 8 // exact in float32
		}
		if len(theta) != 72+4+4+4+12+3 {
			t.Fatalf("%d parameters", len(theta))
		}
		if err := m.SetParams(theta); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "m.safetensors")
		if err := export.TorchFile(path, m); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		st, md := parseSafetensors(t, b)
		if want := "nn.Sequential(\n    " + strings.Join(exportNormModules, ",\n    ") + ",\n)"; md["privtrain.torch"] != want {
			t.Errorf("%v: source\n%s\nwant\n%s", dt, md["privtrain.torch"], want)
		}
		lw := make([]float64, 12) // dense1.weight [4, 3] → [3, 4]
		for i := range 4 {
			for o := range 3 {
				lw[o*4+i] = theta[84+i*3+o]
			}
		}
		want := map[string]struct {
			shape  []int
			values []float64
		}{
			"0.weight": {[]int{4, 2, 3, 3}, theta[0:72]},
			"0.bias":   {[]int{4}, theta[72:76]},
			"1.weight": {[]int{4}, theta[76:80]},
			"1.bias":   {[]int{4}, theta[80:84]},
			"7.weight": {[]int{3, 4}, lw},
			"7.bias":   {[]int{3}, theta[96:99]},
		}
		if len(st) != len(want) {
			t.Errorf("%v: tensors %v, want the 6 of %v", dt, keys(st), want)
		}
		for name, w := range want {
			if got, ok := st[name]; !ok || !slices.Equal(got.Shape, w.shape) || !slices.Equal(got.values, w.values) {
				t.Errorf("%v: %s is %+v, want %v %v", dt, name, got, w.shape, w.values)
			}
		}
		x := randomInput(m, 3, 9)
		ours := logitsOf(t, m, x)
		tol := 1e-12
		if dt == nn.Float32 {
			tol = 1e-4
		}
		checkTorchLogits(t, dt, 3, "PyTorch's definitions give", x, ours, tol, func(ex []float64) []float64 { return torchNormForward(ex, st) })
	}
}

// TestExportScattering: Scattering2D exports as the module Scattering2D(J, L, C, H, W)
// with its filters, float64 whatever the model's dtype, laid out as its class reads
// them: psi_r holds the wavelets of scales j ≥ r at resolution r, phi_r the low-pass. The
// values are checked against properties of the filters themselves: a Morlet wavelet has
// zero mean (its spectrum vanishes at frequency 0), the low-pass Gaussian's DC gain is
// π/3.1415 (Kymatio's normalisation), and periodising to resolution r keeps the DC term.
func TestExportScattering(t *testing.T) {
	const J, L, H, W = 3, 2, 16, 12 // padded grid 32×24
	m := newModel(t, nn.Spec{Name: "s", InputShape: []int{2, H, W}, NumClasses: 2, Layers: []layers.Layer{
		layers.Scattering2D{J: J, L: L}, layers.Flatten{}, layers.Dense{Units: 2}}}, 1)
	var buf bytes.Buffer
	if err := export.Torch(&buf, m); err != nil {
		t.Fatal(err)
	}
	f, err := tensorfile.DecodeSafetensors(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if src := f.Metadata["privtrain.torch"]; !strings.Contains(src, "Scattering2D(3, 2, 2, 16, 12),") {
		t.Errorf("Sequential source:\n%s", src)
	}
	want := map[string][]int{"0.psi_0": {J * L, 32, 24}, "0.psi_1": {(J - 1) * L, 16, 12},
		"0.phi_0": {32, 24}, "0.phi_1": {16, 12}, "0.phi_2": {8, 6}, "2.weight": {2, 2 * 19 * 2 * 1}, "2.bias": {2}}
	if len(f.Tensors) != len(want) {
		t.Errorf("tensors %v, want %v", slices.Sorted(maps.Keys(f.Tensors)), want)
	}
	for name, shape := range want {
		tt, ok := f.Tensors[name]
		dt := tensorfile.Float64
		if strings.HasPrefix(name, "2.") {
			dt = tensorfile.Float32 // the model's own parameters keep its dtype
		}
		if !ok || !slices.Equal(tt.Shape, shape) || tt.DType != dt {
			t.Errorf("%s: %v %v, want %v %v", name, tt.DType, tt.Shape, dt, shape)
		}
	}
	for r := range J - 1 {
		psi, _ := f.Tensors["0.psi_"+strconv.Itoa(r)].Float64s()
		size := (32 >> r) * (24 >> r)
		for k := range len(psi) / size {
			dc, peak := psi[k*size], 0.0
			for _, v := range psi[k*size : (k+1)*size] {
				peak = max(peak, math.Abs(v))
			}
			if math.Abs(dc) > 1e-9*peak || peak < 0.5 {
				t.Errorf("psi_%d[%d] (scale %d): DC %g, peak %g; want 0 and a band-pass peak near 1 or more", r, k, r+k/L, dc, peak)
			}
		}
	}
	for r := range J {
		phi, _ := f.Tensors["0.phi_"+strconv.Itoa(r)].Float64s()
		if math.Abs(phi[0]-math.Pi/3.1415) > 1e-9 {
			t.Errorf("phi_%d DC = %.12g, want π/3.1415 = %.12g", r, phi[0], math.Pi/3.1415)
		}
	}
}

// torchSoftsign is a custom layer (outside package layers) that says which PyTorch module
// it is: x/(1+|x|), PyTorch's nn.Softsign.
type torchSoftsign struct{}

func (torchSoftsign) Kind() string                        { return "softsign" }
func (torchSoftsign) OutputShape(in []int) ([]int, error) { return in, nil }
func (torchSoftsign) Params([]int) []layers.ParamSpec     { return nil }
func (torchSoftsign) Apply(x *G.Node, _ []*G.Node) (*G.Node, *layers.Tap, error) {
	a, err := G.Abs(x)
	if err != nil {
		return nil, nil, err
	}
	if a, err = G.Add(a, G.NewConstant(1.0)); err != nil {
		return nil, nil, err
	}
	y, err := G.HadamardDiv(x, a)
	return y, nil, err
}
func (torchSoftsign) TorchModule([]int) (string, error) { return "nn.Softsign()", nil }

// TestExportCustomTorchLayer: a layer of another package that implements
// layers.TorchExporter is exported as its module.
func TestExportCustomTorchLayer(t *testing.T) {
	m := newModel(t, customSpec(torchSoftsign{}), 2, nn.WithDType(nn.Float64))
	var buf bytes.Buffer
	if err := export.Torch(&buf, m); err != nil {
		t.Fatal(err)
	}
	_, md := parseSafetensors(t, buf.Bytes())
	want := "nn.Sequential(\n    nn.Flatten(),\n    nn.Linear(9, 4, bias=True),\n    nn.Softsign(),\n    nn.Linear(4, 3, bias=False),\n)"
	if md["privtrain.torch"] != want {
		t.Errorf("source %q, want %q", md["privtrain.torch"], want)
	}
}
