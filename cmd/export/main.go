// Command export writes the trained model of a checkpoint for PyTorch: -o FILE.safetensors
// its parameters as a plain safetensors file, the tensor names of a torch.nn.Sequential of
// the same layers ("1.weight", "1.bias", …, parameter-free layers counted), convolution
// weights OIHW, dense weights [out, in]; -pytorch FILE.py a self-contained Python module
// (torch and numpy only) that defines that Sequential and loads the file. Every built-in
// model exports, the ScatterNet models' scattering transform included (its fixed filters
// are in the file).
//
//	go run ./cmd/export -checkpoint m.ckpt -pytorch model.py   # model.py, model.safetensors
//
// In Python:
//
//	import model
//	net = model.load_model()                  # torch.nn.Module in eval mode
//	probs = model.predict_proba(net, x)       # x: [N, C, H, W] in [0, 1], as predict reads images
//
// The file holds the parameters only: no optimizer state, privacy ledger, seed or
// training statistics. See docs/export.md. Exit status: 0 success, 1 a damaged checkpoint
// or a failed write, 2 bad command line (one line on stderr).
package main

import (
	"os"

	"github.com/privtrain/privtrain/cmd/internal/exportcmd"
)

func main() { os.Exit(exportcmd.Main(os.Args[1:])) }
