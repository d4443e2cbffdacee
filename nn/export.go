package nn

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// ExportTorch writes m's parameters to w as a plain safetensors file laid out for a
// PyTorch torch.nn.Sequential of the same layers, so that
//
//	model.load_state_dict(safetensors.torch.load_file("model.safetensors"))
//
// works. Layer i of the spec is module i of the Sequential, parameter-free layers
// included; each layer maps to one module:
//
//	layers.Conv2D    nn.Conv2d(C, F, (kh, kw), stride, padding, bias=not NoBias)
//	                 "i.weight" [F, C, kh, kw] (OIHW, as stored), "i.bias" [F]
//	layers.Dense     nn.Linear(in, Units, bias=not NoBias)
//	                 "i.weight" [Units, in] (the transpose of ours), "i.bias" [Units]
//	layers.MaxPool2D nn.MaxPool2d((kh, kw), stride, padding)
//	layers.ReLU      nn.ReLU()
//	layers.Tanh      nn.Tanh()
//	layers.Flatten   nn.Flatten()
//	layers.CenterCrop  torchvision.transforms.CenterCrop((h, w)), which crops at the same
//	                 offsets ⌊(H−h)/2⌋, ⌊(W−w)/2⌋ when H−h and W−w are even; for odd
//	                 margins the source names a CenterCrop(h, w) module to define (as
//	                 scripts/check_export.py does)
//
// Inputs are NCHW with the values scaled as the training data were. Our Flatten is
// row-major CHW, PyTorch's order, and the parameters are exchanged in those layouts
// whatever the engine computes in, so the exported model gives the same logits on the
// same NCHW input (to float rounding). The tensors have the model's element type (F32 or
// F64: call .double() on the PyTorch model for F64). The metadata holds "format": "pt",
// "privtrain.model" (the model's name), "privtrain.architecture" (the Architecture as
// JSON, input shape included) and "privtrain.torch" (the Sequential as PyTorch source).
//
// Layers from other packages have no known PyTorch module; ExportTorch refuses them.
func ExportTorch(w io.Writer, m *Model) error {
	tensors, modules, err := torchTensors(m)
	if err != nil {
		return err
	}
	arch, err := m.Architecture()
	if err != nil {
		return err
	}
	archJSON, err := json.Marshal(arch)
	if err != nil {
		return fmt.Errorf("nn: export: architecture: %v", err)
	}
	md := map[string]string{
		"format":                 "pt",
		"privtrain.model":        m.Name(),
		"privtrain.architecture": string(archJSON),
		"privtrain.torch":        "nn.Sequential(\n    " + strings.Join(modules, ",\n    ") + ",\n)",
	}
	if err := checkpoint.EncodeSafetensors(w, tensors, md); err != nil {
		return fmt.Errorf("nn: export: %w", err)
	}
	return nil
}

// ExportTorchFile writes ExportTorch's file to path atomically (mode 0644: the parameters
// are what a private training run publishes).
func ExportTorchFile(path string, m *Model) error {
	if err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return ExportTorch(w, m) }); err != nil {
		return fmt.Errorf("nn: export to %s: %w", path, err)
	}
	return nil
}

// torchTensors lays m's parameters out as PyTorch's state_dict of the Sequential and
// returns each module's PyTorch source.
func torchTensors(m *Model) (map[string]checkpoint.Tensor, []string, error) {
	plan, _, err := planLayers(m.Spec())
	if err != nil {
		return nil, nil, err
	}
	flat := make([]float64, m.NumParams())
	m.Params(flat)
	tensors := map[string]checkpoint.Tensor{}
	put := func(name string, shape []int, v []float64) {
		if m.DType() == Float64 {
			tensors[name] = checkpoint.F64(shape, v)
			return
		}
		tensors[name] = checkpoint.F32(shape, num.Converted[float32](v))
	}
	pair := func(a [2]int) string { return "(" + strconv.Itoa(a[0]) + ", " + strconv.Itoa(a[1]) + ")" }
	var modules []string
	for i, pl := range plan {
		idx := strconv.Itoa(i)
		param := func(j int) []float64 {
			off := pl.paramOffs[j]
			return flat[off : off+num.Prod(pl.params[j].Shape)]
		}
		var mod string
		switch l := pl.layer.(type) {
		case layers.Conv2D:
			s := l.Stride
			for k := range s {
				if s[k] == 0 {
					s[k] = 1
				}
			}
			put(idx+".weight", pl.params[0].Shape, param(0))
			if !l.NoBias {
				put(idx+".bias", pl.params[1].Shape, param(1))
			}
			mod = fmt.Sprintf("nn.Conv2d(%d, %d, kernel_size=%s, stride=%s, padding=%s, bias=%s)",
				pl.in[0], l.Filters, pair(l.Kernel), pair(s), pair(l.Padding), pyBool(!l.NoBias))
		case layers.Dense:
			in, out := pl.in[0], l.Units
			w := param(0) // [in, out]
			wt := make([]float64, len(w))
			for r := range in {
				for c := range out {
					wt[c*in+r] = w[r*out+c]
				}
			}
			put(idx+".weight", []int{out, in}, wt)
			if !l.NoBias {
				put(idx+".bias", pl.params[1].Shape, param(1))
			}
			mod = fmt.Sprintf("nn.Linear(%d, %d, bias=%s)", in, out, pyBool(!l.NoBias))
		case layers.MaxPool2D:
			s := l.Stride
			for k := range s {
				if s[k] == 0 {
					s[k] = l.Kernel[k]
				}
			}
			mod = fmt.Sprintf("nn.MaxPool2d(kernel_size=%s, stride=%s, padding=%s)", pair(l.Kernel), pair(s), pair(l.Padding))
		case layers.ReLU:
			mod = "nn.ReLU()"
		case layers.Tanh:
			mod = "nn.Tanh()"
		case layers.Flatten:
			mod = "nn.Flatten()"
		case layers.CenterCrop:
			if (pl.in[1]-l.Height)%2 != 0 || (pl.in[2]-l.Width)%2 != 0 {
				// torchvision rounds an odd margin's half to even; ours is floored.
				mod = fmt.Sprintf("CenterCrop(%d, %d)", l.Height, l.Width)
			} else {
				mod = fmt.Sprintf("torchvision.transforms.CenterCrop((%d, %d))", l.Height, l.Width)
			}
		default:
			return nil, nil, fmt.Errorf("nn: export: layer %d (%T, kind %q) has no PyTorch equivalent; only package layers' layers can be exported", i, pl.layer, pl.layer.Kind())
		}
		modules = append(modules, mod)
	}
	return tensors, modules, nil
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
