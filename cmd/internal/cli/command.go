package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// Command is a command's flags with the words of its help and of its usage errors: every
// command parses its command line through Command.Parse (or Run), so -help, a bad flag,
// an argument left over and a bad PRIVTRAIN_CPU are handled on one path. The wording
// differs between commands (and is kept: their -help and usage errors are interfaces);
// the fields say how.
type Command struct {
	// Name starts every message: "train", "privacy budget".
	Name  string
	Flags *flag.FlagSet
	// -help prints Header, the flags' defaults and then Footer (if any) on stdout.
	Header string
	Footer func(w io.Writer)
	// ParseHint ends the message of a bad flag, e.g. " (see train -help)".
	ParseHint string
	// Verbatim: a bad flag's message is printed as package flag words it (else on one
	// line, exit.OneLine).
	Verbatim bool
	// HelpOnError: a bad flag also prints the help on stdout.
	HelpOnError bool
	// Args: the command takes arguments after its flags (its body checks them). Else an
	// argument left over is a usage error, its message ended by ArgsHint, e.g.
	// " (see audit -help)".
	Args     bool
	ArgsHint string
	// CPU: the command runs the network kernels and refuses a PRIVTRAIN_CPU that names
	// an unknown path or one this CPU cannot run (CPUPathError).
	CPU bool
}

// Parse parses args. It returns true when the command should run; else it has printed
// the help (-help, status exit.OK) or a one-line usage error on stderr (exit.Usage), and
// status is the command's exit status.
func (c *Command) Parse(args []string, stdout, stderr io.Writer) (status int, ok bool) {
	c.Flags.SetOutput(io.Discard)
	c.Flags.Usage = func() {}
	if err := c.Flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.PrintHelp(stdout)
			return exit.OK, false
		}
		if c.HelpOnError {
			c.PrintHelp(stdout)
		}
		msg := err.Error()
		if !c.Verbatim {
			msg = exit.OneLine(msg)
		}
		fmt.Fprintf(stderr, "%s: %s%s\n", c.Name, msg, c.ParseHint)
		return exit.Usage, false
	}
	if !c.Args && c.Flags.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q%s\n", c.Name, c.Flags.Arg(0), c.ArgsHint)
		return exit.Usage, false
	}
	if c.CPU {
		if err := CPUPathError(); err != nil {
			fmt.Fprintf(stderr, "%s: %s\n", c.Name, err)
			return exit.Usage, false
		}
	}
	return exit.OK, true
}

// PrintHelp prints the command's -help on w.
func (c *Command) PrintHelp(w io.Writer) {
	fmt.Fprint(w, c.Header)
	c.Flags.SetOutput(w)
	c.Flags.PrintDefaults()
	c.Flags.SetOutput(io.Discard)
	if c.Footer != nil {
		c.Footer(w)
	}
}

// Run parses args (Parse) and runs body, printing a one-line message on stderr for its
// error; it returns the exit status.
func (c *Command) Run(args []string, stdout, stderr io.Writer, body func() error) int {
	if status, ok := c.Parse(args, stdout, stderr); !ok {
		return status
	}
	err := body()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", c.Name, exit.OneLine(err.Error()))
	}
	return exit.Status(err)
}
