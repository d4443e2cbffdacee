// Package exportcmd is the export command, shared by cmd/export and cmd/privtrain (export subcommand).
package exportcmd

import (
	"flag"
	"fmt"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/export"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/internal/safeio"
	_ "github.com/privtrain/privtrain/models" // old checkpoints without an architecture
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

const usageHeader = `usage: export -checkpoint FILE -pytorch FILE.py      (module and FILE.safetensors)
       export -checkpoint FILE -o FILE.safetensors [-pytorch FILE.py]

Writes the model of a checkpoint for PyTorch. -o writes its parameters as a plain
safetensors file: tensors named as in an nn.Sequential of the same layers (parameter-free
layers counted), conv weights [out, in, kh, kw], dense weights [out, in], group-norm scale
and shift [C], in the checkpoint's dtype; the scattering's fixed filters in float64.
-pytorch writes a Python module, needing only torch and numpy, whose load_model(path)
reads that file and returns the model (logits; predict_proba gives predict's
probabilities) taking NCHW input scaled as predict scales it. With -pytorch alone the
parameters go to FILE.safetensors beside FILE.py. Parameters only: no optimizer, ledger
or seed. Every built-in model exports, the scatter models included. See docs/export.md.

Flags:
`

// Main runs the export command with args (without the program name) and returns its exit status.
func Main(args []string) int { return run(args, os.Stdout, os.Stderr) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	ckpt := fs.String("checkpoint", "", "checkpoint `FILE` written by train -checkpoint (required)")
	out := fs.String("o", "", "write the parameters to `FILE`, e.g. model.safetensors (required without -pytorch)")
	pyOut := fs.String("pytorch", "", "also write a self-contained PyTorch module `FILE.py` (torch and numpy only) whose load_model(path) reads the -o file (default: FILE.safetensors beside FILE.py)")
	quiet := fs.Bool("q", false, "print nothing on success")
	params := cli.AddParamsFlag(fs)
	signing := cli.SigningFlag(fs, "export", stderr)
	return cli.Run("export", usageHeader, fs, args, stdout, stderr, func() error {
		if fs.NArg() > 0 {
			return exit.Usagef("unexpected argument %q (flags only; see export -help)", fs.Arg(0))
		}
		if *pyOut != "" {
			if filepath.Ext(*pyOut) != ".py" {
				return exit.Usagef("-pytorch %s: want a file name ending in .py, which Python can import", *pyOut)
			}
			if *out == "" {
				*out = strings.TrimSuffix(*pyOut, ".py") + ".safetensors"
			}
			if sameFile(*pyOut, *out) {
				return exit.Usagef("-pytorch %s and -o %s name the same file; choose two", *pyOut, *out)
			}
		}
		if *out == "" {
			return exit.Usagef("-o FILE is required: where to write the .safetensors file (or -pytorch FILE.py for a PyTorch module and its parameters)")
		}
		for _, o := range []struct{ flag, path string }{{"-pytorch", *pyOut}, {"-o", *out}} {
			if o.path == "" {
				continue
			}
			if err := cli.CheckOutput(o.flag, o.path); err != nil {
				return err // a FIFO, a device, a link: never replaced by the export
			}
			if *ckpt != "" && sameFile(*ckpt, o.path) {
				return exit.Usagef("%s %s is the checkpoint itself; choose another file", o.flag, o.path)
			}
			if dir := filepath.Dir(o.path); dir != "" {
				if st, err := os.Stat(dir); err != nil || !st.IsDir() {
					return exit.Usagef("%s %s: directory %s does not exist", o.flag, o.path, dir)
				}
			}
		}
		if err := cli.CheckParams(*params); err != nil {
			return err
		}
		c, err := cli.LoadCheckpoint(*ckpt, signing)
		if err != nil {
			return err
		}
		if err := cli.SelectParams(c, *params); err != nil {
			return err
		}
		if err := cli.PrepareCheckpointPriors(c, stderr); err != nil {
			return fmt.Errorf("-checkpoint %s: %w", *ckpt, err)
		}
		m, err := nn.ModelFromCheckpoint(c, 1)
		if err != nil {
			return fmt.Errorf("-checkpoint %s: %w", *ckpt, err)
		}
		classes, _ := cli.ClassNames(c, m.NumClasses()) // as predict and evaluate name them
		if err := export.TorchFile(*out, m, export.WithClassNames(classes)); err != nil {
			return err
		}
		var name string
		if *pyOut != "" {
			name = strings.TrimSuffix(filepath.Base(*pyOut), ".py")
			opts := []export.Option{export.WithClassNames(classes)}
			if kind, _ := cli.OwnDataKind(c.Settings["dataset"]); kind == "csv" { // the module encodes rows as predict does
				var flags cli.DataFlags
				if err := flags.FromSettings(c.Settings, nil); err != nil {
					return fmt.Errorf("-checkpoint %s: %v", *ckpt, err)
				}
				layout, err := flags.TableLayout(num.Prod(m.InputShape()))
				if err != nil {
					return fmt.Errorf("-checkpoint %s: %v", *ckpt, err)
				}
				opts = append(opts, export.WithTable(layout))
			}
			if err := export.PyTorchFile(*pyOut, m, name, paramsPath(*pyOut, *out), opts...); err != nil {
				return err
			}
		}
		if *quiet {
			return nil
		}
		b, err := readBack(*out)
		if err != nil {
			return err
		}
		f, err := tensorfile.DecodeSafetensors(b)
		if err != nil {
			return fmt.Errorf("reading back %s: %w", *out, err)
		}
		which := "" // a run with train -ema: say which parameters were exported
		if c.EMA > 0 {
			which = ", " + cli.ParamsDescription(c) + " parameters"
		}
		fixed, err := fixedTensors(m, f.Tensors)
		if err != nil {
			return err
		}
		filters := ""
		if fixed > 0 {
			filters = fmt.Sprintf(" and the scattering's fixed filters in %d (float64)", fixed)
		}
		fmt.Fprintf(stdout, "wrote %s: %s, %s parameters in %d tensors (%v%s)%s, input %s (NCHW, scaled to [0,1] as in training), %d classes\n",
			*out, m.Name(), cli.Thousands(m.NumParams()), len(f.Tensors)-fixed, m.DType(), which, filters, cli.Shape(m.InputShape()), m.NumClasses())
		if *pyOut != "" {
			printModuleUse(stdout, *pyOut, name, *out, m.InputShape())
			return nil
		}
		fmt.Fprintf(stdout, "its tensors are the state_dict of this PyTorch model (module i is layer i):\n\nmodel = %s\n", f.Metadata["privtrain.torch"])
		if m.DType() == nn.Float64 {
			fmt.Fprintln(stdout, "model.double()  # the file holds float64 tensors; feed float64 input")
		}
		fmt.Fprintln(stdout)
		fmt.Fprintf(stdout, "to load it in PyTorch with torch and numpy only, write the module that defines it too:\n"+
			"  export -checkpoint %s -o %s -pytorch model.py\n", *ckpt, *out)
		return nil
	})
}

// fixedTensors counts the tensors of the layers without parameters (Scattering2D's
// filters): the exported file's tensors that are no trained parameters.
func fixedTensors(m *nn.Model, tensors map[string]tensorfile.Tensor) (int, error) {
	plan, err := m.LayerStates()
	if err != nil {
		return 0, err
	}
	n := 0
	for name := range tensors {
		i, err := strconv.Atoi(name[:max(strings.IndexByte(name, '.'), 0)])
		if err == nil && i < len(plan) && len(plan[i].Params) == 0 {
			n++
		}
	}
	return n, nil
}

// paramsPath is the parameter file's path as the module finds it: relative to the
// module's folder, or absolute where no relative path leads there.
func paramsPath(module, params string) string {
	dir, err1 := filepath.Abs(filepath.Dir(module))
	abs, err2 := filepath.Abs(params)
	if err1 != nil || err2 != nil {
		return params
	}
	if rel, err := filepath.Rel(dir, abs); err == nil {
		return filepath.ToSlash(rel)
	}
	return abs
}

// printModuleUse says how to load the module written to path, importable as name, with
// the parameters written to params, for input of the given per-example shape.
func printModuleUse(w io.Writer, path, name, params string, shape []int) {
	fmt.Fprintf(w, "wrote %s: the model in PyTorch (needs torch and numpy only); in Python, in %s:\n\n", path, filepath.Dir(path))
	x := "x: [N" // the shape in Python's notation
	for _, d := range shape {
		x += fmt.Sprintf(", %d", d)
	}
	x += "], scaled as predict scales it"
	if token.IsIdentifier(name) {
		fmt.Fprintf(w, "import %s\nmodel = %s.load_model()  # reads %s\nprobs = %s.predict_proba(model, x)  # %s\n", name, name, params, name, x)
		return
	}
	fmt.Fprintf(w, "import runpy\nm = runpy.run_path(%q)  # %s is not a Python name: no import\nmodel = m[\"load_model\"]()  # reads %s\nprobs = m[\"predict_proba\"](model, x)  # %s\n",
		filepath.Base(path), name, params, x)
}

// sameFile reports whether a and b name the same existing file (or the same path).
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// readBack reads the file just written at path (which another process could have
// replaced since: safeio refuses anything but a regular file).
func readBack(path string) ([]byte, error) {
	f, err := safeio.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
