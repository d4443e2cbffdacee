package export_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/export"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// exportSpec is a small network with every built-in layer kind; in PyTorch it is
//
//	Sequential(crop, Conv2d(2, 3, 3, stride=2, padding=1), ReLU(), MaxPool2d(2, stride=1),
//	           Flatten(), Linear(12, 4), Tanh(), Linear(4, 3))
func exportSpec() nn.Spec {
	return nn.Spec{Name: "export-test", InputShape: []int{2, 7, 6}, NumClasses: 3, Layers: []layers.Layer{
		layers.CenterCrop{Height: 5, Width: 5},
		layers.Conv2D{Filters: 3, Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}},
		layers.ReLU{},
		layers.MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}},
		layers.Flatten{},
		layers.Dense{Units: 4},
		layers.Tanh{},
		layers.Dense{Units: 3},
	}}
}

// stTensor is one tensor as read by hand from a safetensors file.
type stTensor struct {
	DType       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
	values      []float64
}

// parseSafetensors reads a safetensors byte stream following the specification
// (github.com/huggingface/safetensors, "Format"), independently of package checkpoint,
// and fails the test on every deviation from it.
func parseSafetensors(t *testing.T, b []byte) (map[string]*stTensor, map[string]string) {
	t.Helper()
	if len(b) < 8 {
		t.Fatalf("%d bytes", len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n%8 != 0 || 8+n > uint64(len(b)) {
		t.Fatalf("header length %d (file %d bytes): must be a multiple of 8 within the file", n, len(b))
	}
	header := b[8 : 8+n]
	if header[0] != '{' {
		t.Fatalf("header starts with %q", header[0])
	}
	trimmed := bytes.TrimRight(header, " ")
	if trimmed[len(trimmed)-1] != '}' || len(header)-len(trimmed) >= 8 {
		t.Fatalf("header %q: JSON padded with up to 7 spaces expected", header)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		t.Fatalf("header JSON: %v", err)
	}
	var md map[string]string
	tensors := map[string]*stTensor{}
	for name, v := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(v, &md); err != nil {
				t.Fatalf("__metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		var st stTensor
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil || len(st.DataOffsets) != 2 {
			t.Fatalf("tensor %s: %s (%v)", name, v, err)
		}
		tensors[name] = &st
	}
	data := b[8+n:]
	names := make([]string, 0, len(tensors))
	for k := range tensors {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return tensors[names[i]].DataOffsets[0] < tensors[names[j]].DataOffsets[0] })
	var at uint64
	for _, name := range names {
		st := tensors[name]
		size := map[string]int{"F32": 4, "F64": 8}[st.DType]
		if size == 0 {
			t.Fatalf("%s: dtype %s", name, st.DType)
		}
		count := 1
		for _, d := range st.Shape {
			count *= d
		}
		if st.DataOffsets[0] != at || st.DataOffsets[1] != at+uint64(count*size) {
			t.Fatalf("%s: offsets %v, want [%d, %d]: the data must be contiguous", name, st.DataOffsets, at, at+uint64(count*size))
		}
		chunk := data[at:st.DataOffsets[1]]
		for i := range count {
			if size == 4 {
				st.values = append(st.values, float64(math.Float32frombits(binary.LittleEndian.Uint32(chunk[4*i:]))))
			} else {
				st.values = append(st.values, math.Float64frombits(binary.LittleEndian.Uint64(chunk[8*i:])))
			}
		}
		at = st.DataOffsets[1]
	}
	if at != uint64(len(data)) {
		t.Fatalf("data section of %d bytes, tensors cover %d", len(data), at)
	}
	return tensors, md
}

// torchForward is the forward pass of exportSpec's PyTorch Sequential on one CHW example,
// by brute force from the exported tensors: what PyTorch computes with them.
func torchForward(x []float64, st map[string]*stTensor) []float64 {
	const C, H, W = 2, 7, 6
	// CenterCrop 5×5: rows 1…5, columns 0…4.
	crop := make([]float64, C*5*5)
	for c := range C {
		for i := range 5 {
			for j := range 5 {
				crop[(c*5+i)*5+j] = x[(c*H+i+(H-5)/2)*W+j+(W-5)/2]
			}
		}
	}
	// Conv2d(2, 3, 3, stride 2, padding 1): out[o][y][x] = b[o] + Σ w[o][c][i][j]·in[c][2y+i−1][2x+j−1].
	w, b := st["1.weight"].values, st["1.bias"].values
	conv := make([]float64, 3*3*3)
	for o := range 3 {
		for y := range 3 {
			for xx := range 3 {
				s := b[o]
				for c := range 2 {
					for i := range 3 {
						for j := range 3 {
							r, q := 2*y+i-1, 2*xx+j-1
							if r >= 0 && r < 5 && q >= 0 && q < 5 {
								s += w[((o*2+c)*3+i)*3+j] * crop[(c*5+r)*5+q]
							}
						}
					}
				}
				conv[(o*3+y)*3+xx] = max(s, 0) // ReLU
			}
		}
	}
	// MaxPool2d(2, stride 1) → 3×2×2, then Flatten in CHW order.
	flat := make([]float64, 12)
	for o := range 3 {
		for y := range 2 {
			for xx := range 2 {
				flat[(o*2+y)*2+xx] = max(conv[(o*3+y)*3+xx], conv[(o*3+y)*3+xx+1], conv[(o*3+y+1)*3+xx], conv[(o*3+y+1)*3+xx+1])
			}
		}
	}
	linear := func(in []float64, w, b []float64, out int) []float64 {
		y := make([]float64, out)
		for o := range out {
			y[o] = b[o]
			for i := range in {
				y[o] += w[o*len(in)+i] * in[i] // weight [out, in]
			}
		}
		return y
	}
	h := linear(flat, st["5.weight"].values, st["5.bias"].values, 4)
	for i := range h {
		h[i] = math.Tanh(h[i])
	}
	return linear(h, st["7.weight"].values, st["7.bias"].values, 3)
}

// TestExportTorch writes the export of a model with known weights and checks the file
// against the safetensors specification, the PyTorch names and layouts (conv OIHW, dense
// [out, in]), and that PyTorch's forward pass with the exported tensors gives our logits.
func TestExportTorch(t *testing.T) {
	for _, dt := range []nn.DType{nn.Float64, nn.Float32} {
		m := newModel(t, exportSpec(), 3, nn.WithDType(dt))
		theta := make([]float64, m.NumParams())
		for j := range theta {
			theta[j] = float64(j%13-6) / 16 // exact in float32
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
		wantDType := map[nn.DType]string{nn.Float32: "F32", nn.Float64: "F64"}[dt]

		// Our flat layout: conv1.weight [3,2,3,3] (54), conv1.bias (3), dense1.weight
		// [12,4] (48), dense1.bias (4), dense2.weight [4,3] (12), dense2.bias (3).
		convW, convB := theta[0:54], theta[54:57]
		d1W, d1B := theta[57:105], theta[105:109]
		d2W, d2B := theta[109:121], theta[121:124]
		transpose := func(w []float64, in, out int) []float64 { // [in, out] → [out, in]
			wt := make([]float64, len(w))
			for i := range in {
				for o := range out {
					wt[o*in+i] = w[i*out+o]
				}
			}
			return wt
		}
		want := map[string]struct {
			shape  []int
			values []float64
		}{
			"1.weight": {[]int{3, 2, 3, 3}, convW},
			"1.bias":   {[]int{3}, convB},
			"5.weight": {[]int{4, 12}, transpose(d1W, 12, 4)},
			"5.bias":   {[]int{4}, d1B},
			"7.weight": {[]int{3, 4}, transpose(d2W, 4, 3)},
			"7.bias":   {[]int{3}, d2B},
		}
		if len(st) != len(want) {
			t.Errorf("%v: tensors %v, want the 6 of %v", dt, keys(st), want)
		}
		for name, w := range want {
			got, ok := st[name]
			if !ok {
				t.Errorf("%v: no tensor %s", dt, name)
				continue
			}
			if got.DType != wantDType || !slices.Equal(got.Shape, w.shape) || !slices.Equal(got.values, w.values) {
				t.Errorf("%v: %s is %s %v %v, want %s %v %v", dt, name, got.DType, got.Shape, got.values, wantDType, w.shape, w.values)
			}
		}
		// safetensors' writer orders same-dtype tensors by name.
		var order []string
		for name, s := range st {
			order = append(order, name)
			_ = s
		}
		sort.Slice(order, func(i, j int) bool { return st[order[i]].DataOffsets[0] < st[order[j]].DataOffsets[0] })
		if !slices.IsSorted(order) {
			t.Errorf("data order %v, want sorted by name", order)
		}
		if md["format"] != "pt" || md["privtrain.model"] != "export-test" || !strings.Contains(md["privtrain.torch"], "nn.Conv2d(2, 3, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=True)") {
			t.Errorf("metadata %v", md)
		}
		var arch nn.Architecture
		if err := json.Unmarshal([]byte(md["privtrain.architecture"]), &arch); err != nil || len(arch.Layers) != 8 || !slices.Equal(arch.InputShape, []int{2, 7, 6}) {
			t.Errorf("architecture metadata %q (%v)", md["privtrain.architecture"], err)
		}

		// PyTorch's forward pass with the exported tensors gives our logits.
		x := randomInput(m, 3, 5)
		for i := range x {
			x[i] = x[i]*2 - 1
		}
		ours := logitsOf(t, m, x)
		tol := 1e-12
		if dt == nn.Float32 {
			tol = 1e-5
		}
		checkTorchLogits(t, dt, 3, "PyTorch layout gives", x, ours, tol, func(ex []float64) []float64 { return torchForward(ex, st) })
	}
}

func keys[V any](m map[string]V) []string {
	var k []string
	for name := range m {
		k = append(k, name)
	}
	slices.Sort(k)
	return k
}

func TestExportRefusesCustomLayers(t *testing.T) {
	m := newModel(t, customSpec(myTanh{}), 2)
	var buf bytes.Buffer
	err := export.Torch(&buf, m)
	if err == nil || !strings.Contains(err.Error(), "no PyTorch equivalent") || buf.Len() != 0 {
		t.Errorf("export of a custom layer: %v (%d bytes written)", err, buf.Len())
	}
}
