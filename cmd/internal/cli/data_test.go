package cli

import (
	"flag"
	"strings"
	"testing"
)

// TestDataSettingsRoundTrip: the settings a run records give back its flags, over the
// defaults of a fresh flag set; a flag given on the command line keeps its value.
func TestDataSettingsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		dataset string
		flags   DataFlags
	}{
		{"csv:t.csv", DataFlags{Label: "kind", Header: "yes", Scale: "0:10,-1:1", TestFraction: 0.35, SplitSeed: 1 << 60, Labels: "fine"}},
		{"images:dir", DataFlags{Header: "auto", ImageSize: "6x5", Channels: 3, TestFraction: 0.1, SplitSeed: 9, Labels: "fine"}},
		{"cifar100", DataFlags{Header: "auto", TestFraction: DefaultTestFraction, SplitSeed: DefaultSplitSeed, Labels: "coarse"}},
	} {
		s := map[string]string{}
		tc.flags.Settings(tc.dataset, s)
		var got DataFlags
		AddDataFlags(flag.NewFlagSet("x", flag.ContinueOnError), &got)
		if err := got.FromSettings(s, nil); err != nil {
			t.Fatal(err)
		}
		if got != tc.flags {
			t.Errorf("%s: settings %v give %+v, want %+v", tc.dataset, s, got, tc.flags)
		}
		kept := DataFlags{Labels: "fine", SplitSeed: 4}
		if err := kept.FromSettings(s, map[string]bool{"split-seed": true, "labels": true}); err != nil || kept.SplitSeed != 4 || kept.Labels != "fine" {
			t.Errorf("%s: given flags overwritten: %+v, %v", tc.dataset, kept, err)
		}
	}
	var o DataFlags
	if err := o.FromSettings(map[string]string{"split-seed": "-1"}, nil); err == nil || !strings.Contains(err.Error(), `split-seed="-1"`) {
		t.Errorf("bad split-seed setting: %v", err)
	}
}
