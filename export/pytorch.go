package export

import (
	"fmt"
	"go/token"
	"io"
	"strconv"
	"strings"
	"text/template"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// PyTorch writes a self-contained Python module for m that needs only torch and numpy:
// build_model() returns the torch.nn.Sequential of Torch's layout (with the classes of
// the layers outside torch.nn defined in the module: CenterCrop, Scattering2D), and
// load_model(path) reads the parameter file Torch writes (the safetensors format, parsed
// with numpy; the safetensors package is not needed), checks that it belongs to this
// model, loads it with load_state_dict(strict=True) and returns the model in eval mode.
// The model takes what nn.Predictor takes, as PyTorch tensors: [N, C, H, W] (or [N, d]
// for a flat input shape) with the values scaled as the training data were (images:
// pixel/255), and returns logits; predict_proba returns their softmax, Predictor's
// Probabilities, and predict the classes. name is the module's import name (for its
// docstring), params the parameter file's path relative to the module's folder: the
// default of load_model's path ("" for none). CLASSES names the classes (WithClassNames,
// else the class numbers), as the parameter file's metadata does.
func PyTorch(w io.Writer, m *nn.Model, name, params string, opts ...Option) error {
	e, err := prepare(m, opts)
	if err != nil {
		return err
	}
	o, modules, defs, archJSON := e.opts, e.modules, e.defs, e.arch
	shape := make([]string, len(m.InputShape()))
	for i, d := range m.InputShape() {
		shape[i] = strconv.Itoa(d)
	}
	dtype := "torch.float32"
	if m.DType() == nn.Float64 {
		dtype = "torch.float64"
	}
	in := fmt.Sprintf("[N, %s]", strings.Join(shape, ", "))
	scaling := fmt.Sprintf("Input: x of shape %s, each feature scaled as the training data were\n"+
		"(predict: CSV values divided by -scale, or mapped from the declared -scale ranges lo:hi\n"+
		"to (x - lo)/(hi - lo)): exactly what predict and nn.Predictor hand the network.", in)
	if len(shape) == 3 {
		scaling = fmt.Sprintf("Input: x of shape %s (NCHW), values in [0, 1] as predict reads images\n"+
			"(pixel v becomes v/255; grayscale for one channel, RGB for three): exactly what\n"+
			"predict and nn.Predictor hand the network; no other normalisation is applied.", in)
	}
	paramsLit := "None"
	if params != "" {
		paramsLit = strconv.QuoteToASCII(params)
	}
	imp, ref := "import "+name, map[string]string{}
	for _, fn := range []string{"load_model", "predict_proba", "predict"} {
		ref[fn] = name + "." + fn
		if !token.IsIdentifier(name) { // my-model.py: no import statement can name it
			imp, ref[fn] = fmt.Sprintf("m = runpy.run_path(%q)  # import runpy", name+".py"), fmt.Sprintf("m[%q]", fn)
		}
	}
	data := map[string]any{
		"Import":       imp,
		"Ref":          ref,
		"Model":        m.Name(),
		"ModelLit":     strconv.QuoteToASCII(m.Name()),
		"Params":       params,
		"ParamsLit":    paramsLit,
		"Input":        in,
		"Scaling":      scaling,
		"Shape":        strings.Join(shape, ", ") + map[bool]string{true: ",", false: ""}[len(shape) == 1],
		"Classes":      m.NumClasses(),
		"ClassNames":   pythonStrings(o.classes),
		"Table":        pythonTable(o.table),
		"MissingCells": pythonStrings(datasets.MissingCells),
		"DType":        dtype,
		"ArchLit":      strconv.QuoteToASCII(string(archJSON)),
		"Definitions":  strings.Join(defs, "\n\n"),
		"Sequential":   "nn.Sequential(\n        " + strings.Join(modules, ",\n        ") + ",\n    )",
		"ScatterNote":  strings.Contains(strings.Join(modules, ""), "Scattering2D("),
		"ExampleParam": map[bool]string{true: params, false: "model.safetensors"}[params != ""],
	}
	if err := pythonModule.Execute(w, data); err != nil {
		return fmt.Errorf("nn: export: %w", err)
	}
	return nil
}

// PyTorchFile writes PyTorch's module to path atomically (mode 0644), with import name
// and parameter file as PyTorch takes them.
func PyTorchFile(path string, m *nn.Model, name, params string, opts ...Option) error {
	if err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return PyTorch(w, m, name, params, opts...) }); err != nil {
		return fmt.Errorf("nn: export to %s: %w", path, err)
	}
	return nil
}

// pythonTable is the Python literal of TABLE_COLUMNS for layout ("" for none): a list of
// dicts, name, and categories or range, fill (None: none) and indicator.
func pythonTable(layout []datasets.CSVColumn) string {
	if layout == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("[\n")
	for _, c := range layout {
		fill := "None"
		if c.Fill != nil {
			fill = strconv.QuoteToASCII(*c.Fill)
		}
		kind := fmt.Sprintf(`"range": (%s, %s)`, strconv.FormatFloat(c.Range.Min, 'g', -1, 64), strconv.FormatFloat(c.Range.Max, 'g', -1, 64))
		if c.Categories != nil {
			kind = `"categories": ` + pythonStrings(c.Categories)
		}
		fmt.Fprintf(&b, "    {\"name\": %s, %s, \"fill\": %s, \"indicator\": %s},\n",
			strconv.QuoteToASCII(c.Name), kind, fill, map[bool]string{true: "True", false: "False"}[c.Indicator])
	}
	b.WriteString("]")
	return b.String()
}

// pythonStrings is the Python list literal of names (ASCII, each quoted as Go quotes it:
// the escapes \\, \", \n, \xhh, \uhhhh and \Uhhhhhhhh mean the same in Python).
func pythonStrings(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.QuoteToASCII(n)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// definitions returns the Python source of the classes the layers of m that are not in
// torch.nn define, each once, in the order of first use; a composite layer's
// (layers.Container) sub-layers count as used after it.
func definitions(plan []nn.LayerState) []string {
	var defs []string
	seen := map[string]bool{}
	var add func(l layers.Layer)
	add = func(l layers.Layer) {
		if d, ok := l.(layers.TorchDefiner); ok && !seen[d.TorchDefinition()] {
			seen[d.TorchDefinition()] = true
			defs = append(defs, strings.TrimRight(d.TorchDefinition(), "\n"))
		}
		if c, ok := l.(layers.Container); ok { // the classes a Residual's sub-layers use
			for _, sub := range c.Sublayers() {
				add(sub)
			}
		}
	}
	for _, pl := range plan {
		add(pl.Layer)
	}
	return defs
}

var pythonModule = template.Must(template.New("module").Parse(`"""The privtrain model {{.Model}} in PyTorch, written by privtrain export -pytorch.

    {{.Import}}
    model = {{.Ref.load_model}}({{if .Params}}{{else}}"{{.ExampleParam}}"{{end}})  # torch.nn.Module in eval mode
    logits = model(x)  # x: {{.DType}} tensor {{.Input}}
    probs = {{.Ref.predict_proba}}(model, x)  # softmax of the logits: predict's probabilities
    classes = {{.Ref.predict}}(model, x)  # the most probable class of each row

{{.Scaling}}
Output: model(x) returns the logits [N, {{.Classes}}]; predict_proba(model, x) their softmax, the
probabilities predict prints; predict(model, x) the class predict prints, and CLASSES[k]
the name of class k (predict's label).
{{- if .ScatterNote}}

The first module, Scattering2D, is the scattering transform, with its fixed filters read
from the parameter file (no Kymatio): see its docstring. It computes in float64 and rounds
its output to float32, as privtrain does.
{{- end}}

load_model reads the parameters from the safetensors file written by the same export
({{if .Params}}default: {{.Params}}, relative to this file's folder{{else}}export -o{{end}}), parsing it with numpy:
only torch and numpy are needed. It refuses a file of another model.
"""

import json
import math
import os

import numpy as np
import torch
from torch import nn

MODEL = {{.ModelLit}}
INPUT_SHAPE = ({{.Shape}})
NUM_CLASSES = {{.Classes}}
# The name of each class, in class-index order: CLASSES[predict(model, x)[i]] names row i's class.
CLASSES = {{.ClassNames}}
DTYPE = {{.DType}}
{{- if .Table}}
# The CSV table's feature columns the model was trained on, in the file's order (the label
# column left out), as train read them: a numeric column scaled from its declared range to
# [0, 1] (clipped), a categorical one one-hot over its declared categories; a missing cell
# (empty or one of MISSING_CELLS, in any case) takes "fill" (None: an error), followed by a
# 0/1 missing indicator where "indicator" is true. encode_rows applies it.
TABLE_COLUMNS = {{.Table}}
MISSING_CELLS = {{.MissingCells}}
{{- end}}
# The parameter file written with this module, relative to this file's folder.
PARAMETERS = {{.ParamsLit}}
# The architecture as privtrain stores it; the parameter file's metadata holds the same.
ARCHITECTURE = {{.ArchLit}}

_SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
                       "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


{{if .Table -}}
def encode_rows(rows):
    """The model's input, a DTYPE tensor {{.Input}}, for rows of the CSV table: each row
    the cells of TABLE_COLUMNS in order (strings as in the file, or numbers), encoded as
    train and predict encode them. A value the table's declarations do not allow raises a
    ValueError naming the row and the column."""
    missing_cells = {m.lower() for m in MISSING_CELLS}
    out = []
    for r, row in enumerate(rows):
        if len(row) != len(TABLE_COLUMNS):
            raise ValueError("row %d has %d cells; want %d (%s)" % (r, len(row), len(TABLE_COLUMNS), ", ".join(c["name"] for c in TABLE_COLUMNS)))
        x = []
        for col, cell in zip(TABLE_COLUMNS, row):
            s = str(cell).strip()
            missing = s == "" or s.lower() in missing_cells
            if missing:
                if col["fill"] is None:
                    raise ValueError("row %d, column %r: missing value %r, and the column declares none" % (r, col["name"], cell))
                s = col["fill"]
            if "categories" in col:
                if s not in col["categories"]:
                    raise ValueError("row %d, column %r: %r is not one of its categories %s" % (r, col["name"], s, col["categories"]))
                x.extend(1.0 if c == s else 0.0 for c in col["categories"])
            else:
                v = float(s)
                if not math.isfinite(v):
                    raise ValueError("row %d, column %r: %r is not a finite number" % (r, col["name"], cell))
                lo, hi = col["range"]
                x.append(min(max((v - lo) / (hi - lo), 0.0), 1.0))
            if col["indicator"]:
                x.append(1.0 if missing else 0.0)
        out.append(x)
    return torch.tensor(np.array(out, dtype=np.float64).reshape(len(out), *INPUT_SHAPE), dtype=DTYPE)


{{end -}}
def read_safetensors(path):
    """Returns ({name: torch.Tensor}, metadata) of the safetensors file at path: an 8-byte
    little-endian header length, a JSON header (dtype, shape, data_offsets of each tensor,
    "__metadata__"), then the tensors' little-endian bytes."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("%s: not a safetensors file (%d bytes)" % (path, len(data)))
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise ValueError("%s: not a safetensors file (header of %d bytes in a file of %d)" % (path, n, len(data)))
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
        metadata = header.pop("__metadata__", None) or {}
        entries = [(name, t["dtype"], [int(d) for d in t["shape"]], [int(o) for o in t["data_offsets"]])
                   for name, t in header.items()]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError("%s: not a safetensors file (header: %s)" % (path, err)) from None
    body = memoryview(data)[8 + n:]
    tensors = {}
    for name, dtype, shape, offsets in entries:
        if dtype not in _SAFETENSORS_DTYPES:
            raise ValueError("%s: tensor %s has dtype %s, which this reader does not know" % (path, name, dtype))
        dt = np.dtype(_SAFETENSORS_DTYPES[dtype])
        if len(offsets) != 2 or min(shape, default=0) < 0:
            raise ValueError("%s: tensor %s: data_offsets %s, shape %s" % (path, name, offsets, shape))
        lo, hi = offsets
        if not 0 <= lo <= hi <= len(body) or hi - lo != math.prod(shape) * dt.itemsize:
            raise ValueError("%s: tensor %s: bytes %d…%d do not hold %s %s" % (path, name, lo, hi, dtype, shape))
        a = np.frombuffer(body[lo:hi], dtype=dt).reshape(shape)
        tensors[name] = torch.from_numpy(a.astype(dt.newbyteorder("="), copy=True))
    return tensors, metadata

{{if .Definitions}}
{{.Definitions}}

{{end}}
def build_model():
    """The model with zero parameters: torch.nn.Sequential of privtrain's layers, module i
    for layer i (parameter-free layers included)."""
    model = {{.Sequential}}
    return model.double() if DTYPE == torch.float64 else model


def load_model(path=None):
    """The model with the parameters of the safetensors file at path ({{if .Params}}default: PARAMETERS
    beside this file{{else}}required{{end}}), in eval mode: build_model() and load_state_dict(strict=True). Raises
    ValueError for a file that holds another model's parameters."""
    if path is None:
        if PARAMETERS is None:
            raise ValueError("load_model: give the path of the parameter file (export -o FILE.safetensors)")
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), PARAMETERS)
    tensors, metadata = read_safetensors(path)
    arch = metadata.get("privtrain.architecture")
    if arch is not None and json.loads(arch) != json.loads(ARCHITECTURE):
        raise ValueError("%s holds the parameters of another model (%s), not of %s: export the module and the "
                         "parameters from the same checkpoint" % (path, metadata.get("privtrain.model", "?"), MODEL))
    model = build_model()
    model.load_state_dict(tensors, strict=True)
    return model.eval()


def _input(model, x):
    """x as a tensor of DTYPE on the model's device, checked against INPUT_SHAPE."""
    device = next(model.parameters()).device
    x = torch.as_tensor(x, dtype=DTYPE, device=device)
    if x.dim() != 1 + len(INPUT_SHAPE) or tuple(x.shape[1:]) != INPUT_SHAPE:
        raise ValueError("input of shape %s; the model takes [N, %s]" % (list(x.shape), ", ".join(map(str, INPUT_SHAPE))))
    return x


def predict_proba(model, x):
    """The class probabilities [N, NUM_CLASSES] of the inputs x (a tensor or numpy array of
    shape [N, *INPUT_SHAPE]): the softmax of the logits, what privtrain's predict prints."""
    with torch.no_grad():
        return torch.softmax(model(_input(model, x)), dim=1)


def predict(model, x):
    """The most probable class of each input, as predict's class column."""
    return predict_proba(model, x).argmax(dim=1)
`))
