// Package export writes a trained model for other frameworks: Torch and TorchFile lay its
// parameters out as PyTorch's state_dict of the equivalent torch.nn.Sequential, in a
// plain safetensors file with the Sequential's source in its metadata; PyTorch and
// PyTorchFile write the self-contained Python module (torch and numpy only) that builds
// that Sequential, defines the layers torch.nn lacks (the scattering transform among
// them) and loads the file. (Inference on a model, Predictor, is package nn's: it needs
// no other framework.)
package export

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

// Torch writes m's parameters to w as a plain safetensors file laid out for a
// PyTorch torch.nn.Sequential of the same layers: the state_dict that the Python module
// written by PyTorch loads (load_model). Layer i of the spec is module i of the
// Sequential, parameter-free layers included. Each layer says which module it is (layers.TorchExporter, in the layer's own
// file) and how its parameters map to the module's (layers.TorchParamsExporter, e.g.
// Dense's weight transposed to Linear's [out, in]; by default "i.<param>" with our shape).
// The layers of package layers map to:
//
//	layers.Conv2D      nn.Conv2d(C, F, (kh, kw), stride, padding, bias=not NoBias)
//	                   "i.weight" [F, C, kh, kw] (OIHW, as stored), "i.bias" [F]
//	layers.Dense       nn.Linear(in, Units, bias=not NoBias)
//	                   "i.weight" [Units, in] (the transpose of ours), "i.bias" [Units]
//	layers.GroupNorm   nn.GroupNorm(groups, C, eps=1e-05, affine=not NoAffine)
//	                   "i.weight" [C] (γ), "i.bias" [C] (β)
//	layers.MaxPool2D   nn.MaxPool2d((kh, kw), stride, padding)
//	layers.AvgPool2D   nn.AvgPool2d((kh, kw), stride, padding, count_include_pad=False)
//	layers.GlobalAvgPool2D  nn.AdaptiveAvgPool2d(1)
//	layers.ReLU        nn.ReLU()
//	layers.Tanh        nn.Tanh()
//	layers.Flatten     nn.Flatten()
//	layers.CenterCrop  CenterCrop(h, w), rows ⌊(H−h)/2⌋… and columns ⌊(W−w)/2⌋…
//	layers.Scattering2D  Scattering2D(J, L, C, H, W), the transform in torch.fft;
//	                   "i.psi_r", "i.phi_r": its filters (real spectra), float64
//	layers.WSConv2D    WSConv2d(C, F, (kh, kw), stride, padding, bias), an nn.Conv2d
//	                   standardising its weight in forward; tensors as Conv2d's
//	layers.Residual    Residual([body], [shortcut], [post]): post(body(x) + shortcut(x)),
//	                   each list an nn.Sequential of the sub-layers' modules;
//	                   "i.body.j.<param>", "i.shortcut.j.<param>", "i.post.0.<param>"
//
// The last four are no torch.nn modules: they implement layers.TorchDefiner, and the
// Python module of PyTorch defines them. A layer that does not implement
// layers.TorchExporter is refused.
//
// Inputs are NCHW with the values scaled as the training data were. Our Flatten is
// row-major CHW, PyTorch's order, and the parameters are exchanged in those layouts
// whatever the engine computes in, so the exported model gives the same logits on the
// same NCHW input (to float rounding). The tensors have the model's element type (F32 or
// F64: call .double() on the PyTorch model for F64). The metadata holds "format": "pt",
// "privtrain.model" (the model's name), "privtrain.architecture" (the Architecture as
// JSON, input shape included), "privtrain.torch" (the Sequential as PyTorch source) and
// "privtrain.classes" (the class names as a JSON list of strings, class 0 first: those
// of WithClassNames, else the class numbers "0", "1", …).
func Torch(w io.Writer, m *nn.Model, opts ...Option) error {
	e, err := prepare(m, opts)
	if err != nil {
		return err
	}
	o, tensors, modules, archJSON := e.opts, e.tensors, e.modules, e.arch
	classesJSON, err := json.Marshal(o.classes)
	if err != nil {
		return fmt.Errorf("nn: export: class names: %v", err)
	}
	md := map[string]string{
		"format":                 "pt",
		"privtrain.model":        m.Name(),
		"privtrain.architecture": string(archJSON),
		"privtrain.torch":        "nn.Sequential(\n    " + strings.Join(modules, ",\n    ") + ",\n)",
		"privtrain.classes":      string(classesJSON),
	}
	if err := tensorfile.EncodeSafetensors(w, tensors, md); err != nil {
		return fmt.Errorf("nn: export: %w", err)
	}
	return nil
}

// TorchFile writes Torch's file to path atomically (mode 0644: the parameters
// are what a private training run publishes).
func TorchFile(path string, m *nn.Model, opts ...Option) error {
	if err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return Torch(w, m, opts...) }); err != nil {
		return fmt.Errorf("nn: export to %s: %w", path, err)
	}
	return nil
}

// torchTensors lays m's parameters out as PyTorch's state_dict of the Sequential and
// returns each module's PyTorch source and the definitions of the classes they use
// outside torch.nn.
func torchTensors(m *nn.Model) (map[string]tensorfile.Tensor, []string, []string, error) {
	plan, err := m.LayerStates()
	if err != nil {
		return nil, nil, nil, err
	}
	tensors := map[string]tensorfile.Tensor{}
	put := func(name string, shape []int, v []float64, f64 bool) {
		if f64 || m.DType() == nn.Float64 {
			tensors[name] = tensorfile.F64(shape, v)
			return
		}
		tensors[name] = tensorfile.F32(shape, num.Converted[float32](v))
	}
	var modules []string
	for i, pl := range plan {
		idx := strconv.Itoa(i)
		ex, ok := pl.Layer.(layers.TorchExporter)
		if !ok {
			return nil, nil, nil, fmt.Errorf("nn: export: layer %d (%T, kind %q) has no PyTorch equivalent: it does not implement layers.TorchExporter", i, pl.Layer, pl.Layer.Kind())
		}
		mod, err := ex.TorchModule(pl.InputShape)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("nn: export: layer %d (%s) has no PyTorch equivalent: %w", i, pl.Layer.Kind(), err)
		}
		params := pl.Values
		var ts []layers.TorchTensor
		if pe, ok := ex.(layers.TorchParamsExporter); ok {
			if ts, err = pe.TorchParams(pl.InputShape, params); err != nil {
				return nil, nil, nil, fmt.Errorf("nn: export: layer %d (%s): %w", i, pl.Layer.Kind(), err)
			}
		} else {
			for j, p := range pl.Params {
				ts = append(ts, layers.TorchTensor{Name: p.Name, Shape: p.Shape, Values: params[j]})
			}
		}
		for _, t := range ts {
			if _, dup := tensors[idx+"."+t.Name]; dup || t.Name == "" || num.Prod(t.Shape) != len(t.Values) {
				return nil, nil, nil, fmt.Errorf("nn: export: layer %d (%s): tensor %q of shape %v with %d values (empty or repeated name, or wrong size)", i, pl.Layer.Kind(), t.Name, t.Shape, len(t.Values))
			}
			put(idx+"."+t.Name, t.Shape, t.Values, t.Float64)
		}
		modules = append(modules, mod)
	}
	return tensors, modules, definitions(plan), nil
}

// prepared is what both exports of a model start from: the options applied, the
// tensors and modules of Torch's layout, the definitions of the layers outside torch.nn,
// and the architecture as JSON.
type prepared struct {
	opts          exportOptions
	tensors       map[string]tensorfile.Tensor
	modules, defs []string
	arch          []byte
}

func prepare(m *nn.Model, opts []Option) (e prepared, err error) {
	if e.opts, err = options(m, opts); err != nil {
		return e, err
	}
	if e.tensors, e.modules, e.defs, err = torchTensors(m); err != nil {
		return e, err
	}
	arch, err := m.Architecture()
	if err != nil {
		return e, err
	}
	if e.arch, err = json.Marshal(arch); err != nil {
		return e, fmt.Errorf("nn: export: architecture: %v", err)
	}
	return e, nil
}
