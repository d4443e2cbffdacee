package traincmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/internal/strictjson"
	"github.com/privtrain/privtrain/nn"
)

// A -model that ends in ".json" names a file holding a network in the architecture JSON
// that checkpoints store (nn.Architecture; docs/models.md). It is trained, checkpointed,
// evaluated and exported like a built-in model: the checkpoint stores the architecture, so
// evaluate, predict and export need only the checkpoint.

// maxModelFile bounds the size of a -model FILE.json: a network description of a few
// hundred layers is a few tens of kilobytes.
const maxModelFile = 1 << 20

// settingModelFile records the SHA-256 of a -model FILE.json's bytes in the run's
// settings, so that a resumed run refuses an edited file.
const settingModelFile = "model-file-sha256"

func isModelFile(model string) bool { return strings.HasSuffix(strings.ToLower(model), ".json") }

// readModelFile reads and decodes -model path (strictly: unknown fields are errors), and
// returns the architecture with its file's SHA-256.
func readModelFile(path string) (*nn.Architecture, string, error) {
	f, err := safeio.Open(path)
	if err != nil {
		return nil, "", exit.Usagef("-model %s: %v", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(safeio.LimitReader(f, maxModelFile, "a model file"))
	if err != nil {
		return nil, "", exit.Usagef("-model %s: %v", path, err)
	}
	var a nn.Architecture
	if err := strictjson.Unmarshal(data, &a); err != nil {
		return nil, "", exit.Usagef("-model %s: %v (the file holds one JSON object: input_shape, num_classes, layers; see docs/models.md)", path, err)
	}
	sum := sha256.Sum256(data)
	return &a, hex.EncodeToString(sum[:]), nil
}

// modelFileSpec is the network of -model FILE.json for examples of shape and classes
// classes. The file's input_shape and num_classes may be left out (taken from the data);
// given, they must be the data's. The file is read once per run: later calls (the plan,
// the model, the checkpoint) use what the first read, so the network trained is the one
// whose SHA-256 is recorded even if the file changes meanwhile.
func modelFileSpec(o *options, shape []int, classes int) (nn.Spec, error) {
	if o.modelFileArch == nil {
		a, sum, err := readModelFile(o.model)
		if err != nil {
			return nn.Spec{}, err
		}
		o.modelFileArch, o.modelFileSum = a, sum
	}
	a := *o.modelFileArch // a copy: the shape and classes filled in below are this call's
	if a.InputShape == nil {
		a.InputShape = slices.Clone(shape)
	} else if !slices.Equal(a.InputShape, shape) {
		return nn.Spec{}, exit.Usagef("-model %s: input_shape %v, but -dataset %s has examples of %s (leave input_shape out to take the data's)",
			o.model, a.InputShape, o.dataset, cli.Shape(shape))
	}
	if a.NumClasses == 0 {
		a.NumClasses = classes
	} else if a.NumClasses != classes {
		return nn.Spec{}, exit.Usagef("-model %s: num_classes %d, but -dataset %s has %d classes (leave num_classes out to take the data's)",
			o.model, a.NumClasses, o.dataset, classes)
	}
	name := strings.TrimSuffix(filepath.Base(o.model), filepath.Ext(o.model))
	spec, err := nn.SpecOf(&a, name)
	if err != nil {
		return nn.Spec{}, exit.Usagef("-model %s: %s", o.model, strings.TrimPrefix(err.Error(), "nn: "))
	}
	_, out, err := walkSpec(spec)
	if err != nil {
		return nn.Spec{}, exit.Usagef("-model %s: %v", o.model, err)
	}
	if len(out) != 1 || out[0] != classes {
		return nn.Spec{}, exit.Usagef("-model %s: the last layer gives %s values, want %d logits (a flat [%d]: a dense layer of %d units last)",
			o.model, cli.Shape(out), classes, classes, classes)
	}
	return spec, nil
}

// printModel writes the architecture JSON of -model for examples of shape and classes
// classes: a starting point for a -model FILE.json.
func printModel(o *options, shape []int, classes int, w io.Writer) error {
	spec, err := modelSpec(o, shape, classes)
	if err != nil {
		return err
	}
	a, err := nn.ArchitectureOf(spec)
	if err != nil {
		return err
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	var out strings.Builder
	if err := writeShortJSON(&out, json.NewDecoder(bytes.NewReader(b)), ""); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", out.String())
	return err
}

// shortJSON is the width up to which writeShortJSON keeps an object or array on one line.
const shortJSON = 100

// writeShortJSON writes the next JSON value of d, which holds compact JSON, indented by
// two spaces a level, each object or array whose compact form fits in shortJSON
// characters on one line; keys keep their order.
func writeShortJSON(b *strings.Builder, d *json.Decoder, indent string) error {
	var raw json.RawMessage
	if err := d.Decode(&raw); err != nil {
		return err
	}
	if len(raw) <= shortJSON || (raw[0] != '{' && raw[0] != '[') {
		b.Write(raw)
		return nil
	}
	inner := json.NewDecoder(bytes.NewReader(raw))
	open, _ := inner.Token() // { or [
	b.WriteString(fmt.Sprint(open) + "\n")
	for first := true; inner.More(); first = false {
		if !first {
			b.WriteString(",\n")
		}
		b.WriteString(indent + "  ")
		if open == json.Delim('{') {
			key, _ := inner.Token()
			k, _ := json.Marshal(key)
			b.WriteString(string(k) + ": ")
		}
		if err := writeShortJSON(b, inner, indent+"  "); err != nil {
			return err
		}
	}
	if open == json.Delim('{') {
		b.WriteString("\n" + indent + "}")
	} else {
		b.WriteString("\n" + indent + "]")
	}
	return nil
}
