package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSubcommands(t *testing.T) {
	// Every command under cmd/ is a subcommand; a new one joins the table.
	want := []string{"train", "evaluate", "predict", "export", "privacy", "audit", "erm"}
	for _, name := range want {
		if _, ok := lookup(name); !ok {
			t.Errorf("subcommand %q missing", name)
		}
	}
	if len(subcommands) != len(want) {
		t.Errorf("%d subcommands, want %d", len(subcommands), len(want))
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"trian"}, {"help", "nope"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		if errb.Len() == 0 {
			t.Errorf("%q: nothing on stderr", args)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "erm") {
		t.Errorf("help: exit %d, output %q", code, out.String())
	}
}
