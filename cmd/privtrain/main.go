// Command privtrain is every privtrain command in one binary: train a network with
// differential privacy, evaluate it, predict with it, export it to PyTorch, compute and
// track privacy, audit it empirically, and train private linear models.
//
//	go install github.com/privtrain/privtrain/cmd/privtrain@latest
//	privtrain train -epsilon 3
//	privtrain evaluate -checkpoint run.ckpt
//	privtrain help train
//
// Each subcommand is the command of the same name under cmd/ (cmd/train, cmd/evaluate,
// …), with the same flags, output and exit statuses: "privtrain train -epochs 2" is
// "train -epochs 2". Exit status 2 for an unknown subcommand.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/privtrain/privtrain/cmd/internal/auditcmd"
	"github.com/privtrain/privtrain/cmd/internal/ermcmd"
	"github.com/privtrain/privtrain/cmd/internal/evaluatecmd"
	"github.com/privtrain/privtrain/cmd/internal/exportcmd"
	"github.com/privtrain/privtrain/cmd/internal/predictcmd"
	"github.com/privtrain/privtrain/cmd/internal/privacycmd"
	"github.com/privtrain/privtrain/cmd/internal/traincmd"
)

// subcommand is one entry of the table: its name, what it does in a line, and its Main.
type subcommand struct {
	name, summary string
	main          func(args []string) int
}

var subcommands = []subcommand{
	{"train", "train a network with differential privacy (DP-SGD and the seed papers' optimizers)", traincmd.Main},
	{"evaluate", "measure a checkpoint's model on a data set: accuracy, per-class table, confusion matrix", evaluatecmd.Main},
	{"predict", "classify images or CSV rows with a checkpoint's model", predictcmd.Main},
	{"export", "write a checkpoint's model for PyTorch", exportcmd.Main},
	{"privacy", "compute ε of a training plan, a checkpoint's ledger, or a data set's budget", privacycmd.Main},
	{"audit", "audit a mechanism's privacy empirically (one-run and multi-run audits)", auditcmd.Main},
	{"erm", "train a private linear model with the seed papers' ERM solvers", ermcmd.Main},
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "help":
		if len(rest) == 0 {
			usage(stdout)
			return 0
		}
		if c, ok := lookup(rest[0]); ok {
			return c.main([]string{"-help"})
		}
		fmt.Fprintf(stderr, "privtrain: help: unknown subcommand %q (run \"privtrain help\" for the list)\n", rest[0])
		return 2
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "privtrain: unknown subcommand %q (run \"privtrain help\" for the list)\n", name)
		return 2
	}
	return c.main(rest)
}

func lookup(name string) (subcommand, bool) {
	for _, c := range subcommands {
		if c.name == name {
			return c, true
		}
	}
	return subcommand{}, false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "privtrain: differentially private training in one binary.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: privtrain <subcommand> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Subcommands:")
	for _, c := range subcommands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run \"privtrain <subcommand> -help\" (or \"privtrain help <subcommand>\") for its flags.")
}
