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
		// A resumed run of a checkpoint from before the content-hash split keeps its rule.
		{"csv:t.csv", DataFlags{Label: "kind", Header: "yes", Scale: "0:10", TestFraction: 0.2, SplitSeed: 3, Labels: "fine", LegacySplit: true}},
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

// TestDataSplitRule: a run on csv: or images: records test-split content-hash; a
// checkpoint with test-fraction but without it (written before the content-hash split)
// reads as LegacySplit, whatever flags are given; one without test-fraction (a built-in
// data set) does not; an unknown rule is an error naming the setting.
func TestDataSplitRule(t *testing.T) {
	s := map[string]string{}
	(&DataFlags{TestFraction: 0.2, SplitSeed: 1, Labels: "fine"}).Settings("images:d", s)
	if s[SettingTestSplit] != "content-hash" {
		t.Errorf("a new run's settings %v: want test-split content-hash", s)
	}
	for _, tc := range []struct {
		settings map[string]string
		legacy   bool
	}{
		{map[string]string{"test-fraction": "0.2", "split-seed": "1", "test-split": "content-hash"}, false},
		{map[string]string{"test-fraction": "0.2", "split-seed": "1"}, true},
		{map[string]string{"dataset": "mnist"}, false},
	} {
		o := DataFlags{LegacySplit: !tc.legacy}
		if err := o.FromSettings(tc.settings, map[string]bool{"test-fraction": true, "split-seed": true}); err != nil || o.LegacySplit != tc.legacy {
			t.Errorf("settings %v: LegacySplit %v (err %v), want %v", tc.settings, o.LegacySplit, err, tc.legacy)
		}
	}
	var o DataFlags
	if err := o.FromSettings(map[string]string{"test-fraction": "0.2", "test-split": "v2"}, nil); err == nil || !strings.Contains(err.Error(), `test-split="v2": unknown`) {
		t.Errorf("unknown rule: %v", err)
	}
}
