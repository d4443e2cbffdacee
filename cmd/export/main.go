// Command export writes the trained parameters of a checkpoint as a plain .safetensors
// file laid out for PyTorch: the tensor names of a torch.nn.Sequential of the same
// layers ("1.weight", "1.bias", …, parameter-free layers counted), convolution weights
// OIHW, dense weights [out, in]. It prints the Sequential to build in PyTorch.
//
//	go run ./cmd/export -checkpoint m.ckpt -o m.safetensors
//
// In Python:
//
//	model = nn.Sequential(...)                       # as printed
//	model.load_state_dict(safetensors.torch.load_file("m.safetensors"))
//
// The file holds the parameters only: no optimizer state, privacy ledger, seed or
// training statistics. Exit status: 0 success, 1 a damaged checkpoint or a failed write,
// 2 bad command line (one line on stderr).
package main

import (
	"os"

	"github.com/privtrain/privtrain/cmd/internal/exportcmd"
)

func main() { os.Exit(exportcmd.Main(os.Args[1:])) }
