package cli

import (
	"bytes"
	"flag"
	"io"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// TestCommandParse checks each outcome of the one parse path with the words a command
// chooses: the help, a bad flag (one line or verbatim, with or without the help), an
// argument left over, and arguments left to the body.
func TestCommandParse(t *testing.T) {
	newCmd := func() *Command {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.Int("n", 1, "a `number`")
		return &Command{Name: "x y", Flags: fs, Header: "usage: x y\n", Footer: func(w io.Writer) { io.WriteString(w, "end\n") }}
	}
	const help = "usage: x y\n  -n number\n    \ta number (default 1)\nend\n"
	for _, tc := range []struct {
		name           string
		edit           func(*Command)
		args           []string
		status         int
		ok             bool
		stdout, stderr string
	}{
		{"help", nil, []string{"-h"}, exit.OK, false, help, ""},
		{"bad flag", func(c *Command) { c.ParseHint = " (see x y -help)" }, []string{"-m"}, exit.Usage, false, "", "x y: flag provided but not defined: -m (see x y -help)\n"},
		{"one line", nil, []string{"-a  \nb"}, exit.Usage, false, "", "x y: flag provided but not defined: -a b\n"},
		{"verbatim", func(c *Command) { c.Verbatim = true }, []string{"-a  b"}, exit.Usage, false, "", "x y: flag provided but not defined: -a  b\n"},
		{"help on error", func(c *Command) { c.HelpOnError = true }, []string{"-n", "z"}, exit.Usage, false, help, "x y: invalid value \"z\" for flag -n: parse error\n"},
		{"argument", func(c *Command) { c.ArgsHint = " (flags only)" }, []string{"-n", "2", "f"}, exit.Usage, false, "", "x y: unexpected argument \"f\" (flags only)\n"},
		{"arguments taken", func(c *Command) { c.Args = true }, []string{"f"}, exit.OK, true, "", ""},
		{"flags", nil, []string{"-n", "2"}, exit.OK, true, "", ""},
	} {
		c := newCmd()
		if tc.edit != nil {
			tc.edit(c)
		}
		var stdout, stderr bytes.Buffer
		status, ok := c.Parse(tc.args, &stdout, &stderr)
		if status != tc.status || ok != tc.ok || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
			t.Errorf("%s: Parse(%q) = %d, %v, stdout %q, stderr %q; want %d, %v, %q, %q", tc.name, tc.args, status, ok, stdout.String(), stderr.String(), tc.status, tc.ok, tc.stdout, tc.stderr)
		}
	}
}
