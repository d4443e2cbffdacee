// Package exportcmd is the export command, shared by cmd/export and cmd/privtrain (export subcommand).
package exportcmd

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/export"
	_ "github.com/privtrain/privtrain/models" // old checkpoints without an architecture
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

const usageHeader = `usage: export -checkpoint FILE -o FILE.safetensors

Writes the model of a checkpoint as a plain safetensors file for PyTorch: tensors named
as in an nn.Sequential of the same layers (parameter-free layers counted), conv weights
[out, in, kh, kw], dense weights [out, in], group-norm scale and shift [C], in the
checkpoint's dtype. Prints the Sequential to load it into. Parameters only: no optimizer,
ledger or seed. A layer without a torch.nn module (scattering2d) is refused.

Flags:
`

// Main runs the export command with args (without the program name) and returns its exit status.
func Main(args []string) int { return run(args, os.Stdout, os.Stderr) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	ckpt := fs.String("checkpoint", "", "checkpoint `FILE` written by train -checkpoint (required)")
	out := fs.String("o", "", "output `FILE`, e.g. model.safetensors (required)")
	quiet := fs.Bool("q", false, "print nothing on success")
	params := cli.AddParamsFlag(fs)
	signing := cli.SigningFlag(fs, "export", stderr)
	return cli.Run("export", usageHeader, fs, args, stdout, stderr, func() error {
		if fs.NArg() > 0 {
			return exit.Usagef("unexpected argument %q (flags only; see export -help)", fs.Arg(0))
		}
		if *out == "" {
			return exit.Usagef("-o FILE is required: where to write the .safetensors file")
		}
		if *ckpt != "" && sameFile(*ckpt, *out) {
			return exit.Usagef("-o %s is the checkpoint itself; choose another file", *out)
		}
		if dir := filepath.Dir(*out); dir != "" {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return exit.Usagef("-o %s: directory %s does not exist", *out, dir)
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
		m, err := nn.ModelFromCheckpoint(c, 1)
		if err != nil {
			return fmt.Errorf("-checkpoint %s: %w", *ckpt, err)
		}
		if err := export.TorchFile(*out, m); err != nil {
			return err
		}
		if *quiet {
			return nil
		}
		b, err := os.ReadFile(*out)
		if err != nil {
			return err
		}
		f, err := checkpoint.DecodeSafetensors(b)
		if err != nil {
			return fmt.Errorf("reading back %s: %w", *out, err)
		}
		which := "" // a run with train -ema: say which parameters were exported
		if c.EMA > 0 {
			which = ", " + cli.ParamsDescription(c) + " parameters"
		}
		fmt.Fprintf(stdout, "wrote %s: %s, %s parameters in %d tensors (%v%s), input %s (NCHW, scaled to [0,1] as in training), %d classes\n",
			*out, m.Name(), cli.Thousands(m.NumParams()), len(f.Tensors), m.DType(), which, cli.Shape(m.InputShape()), m.NumClasses())
		src := f.Metadata["privtrain.torch"]
		imports := "from torch import nn\nimport safetensors.torch\n"
		if strings.Contains(src, "torchvision.") {
			imports += "import torchvision\n"
		}
		if strings.Contains(src, " CenterCrop(") {
			imports += cropModule
		}
		fmt.Fprintf(stdout, "load it into this PyTorch model:\n\n%smodel = %s\nmodel.load_state_dict(safetensors.torch.load_file(%q))\n", imports, src, *out)
		if m.DType() == nn.Float64 {
			fmt.Fprintln(stdout, "model.double()  # the file holds float64 tensors; feed float64 input")
		}
		return nil
	})
}

// cropModule is privtrain's centre crop in PyTorch, for crops whose margins are odd
// (torchvision's CenterCrop rounds their halves differently).
const cropModule = `class CenterCrop(nn.Module):
    def __init__(self, h, w):
        super().__init__()
        self.h, self.w = h, w
    def forward(self, x):
        top, left = (x.shape[-2] - self.h) // 2, (x.shape[-1] - self.w) // 2
        return x[..., top:top + self.h, left:left + self.w]
`

// sameFile reports whether a and b name the same existing file (or the same path).
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
