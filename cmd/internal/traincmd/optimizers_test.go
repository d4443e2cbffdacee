package traincmd

import (
	"bytes"
	"context"
	"flag"
	"io"
	"maps"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// parseOptions parses args as run does and fills the defaults, without loading data.
func parseOptions(t *testing.T, args ...string) *options {
	t.Helper()
	o := &options{}
	fs := newFlagSet(o)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	o.resolve()
	return o
}

// TestOptimizerTable checks every entry of the optimizer table for completeness and
// consistency: each has a name, help and a valid default learning rate; its defaults
// pass validation; it builds a rule that descends on its first step; the settings it
// records hold exactly the optimizer flags it takes (and the privacy settings iff it is
// private) and survive a checkpoint round trip; every optimizer flag is accepted by the
// optimizers that take it and refused, naming the flag, by the others; a non-private
// optimizer refuses the privacy flags and names a private counterpart that exists; and
// -help names each optimizer, its help line and the takers of each optimizer flag.
func TestOptimizerTable(t *testing.T) {
	flagNames := map[string]bool{}
	for _, f := range optimizerFlags {
		if f.text != nil {
			if f.name == "" || f.usage == "" || f.textDefault == "" || f.checkText == nil || textValues[f.name] == "" {
				t.Errorf("word-valued optimizer flag %s: incomplete (or no other value in textValues)", f.name)
			}
		} else if f.name == "" || f.usage == "" || f.value == nil || f.check == nil {
			t.Errorf("optimizer flag %+v: incomplete", f)
		}
		flagNames[f.name] = true
	}
	var help bytes.Buffer
	if code := run(context.Background(), []string{"-help"}, &help, &bytes.Buffer{}); code != exit.OK {
		t.Fatalf("-help: exit %d", code)
	}
	seen := map[string]bool{}
	for _, spec := range optimizers {
		name := spec.name
		if name == "" || seen[name] {
			t.Errorf("optimizer %q: empty or duplicate name", name)
			continue
		}
		seen[name] = true
		if spec.help == "" || spec.build == nil || !(spec.lr > 0) || math.IsInf(spec.lr, 0) {
			t.Errorf("%s: incomplete entry (help %q, build set %v, lr %v)", name, spec.help, spec.build != nil, spec.lr)
			continue
		}
		if !strings.Contains(help.String(), name) || !strings.Contains(help.String(), spec.help) {
			t.Errorf("-help does not describe %s", name)
		}
		for f, def := range spec.takes {
			if !flagNames[f] {
				t.Errorf("%s takes %q, which is not an optimizer flag", name, f)
				continue
			}
			if fl := flagByName(f); fl.text != nil {
				if err := fl.checkText(fl.textDefault); err != nil {
					t.Errorf("%s: default -%s %v is invalid: %v", name, f, fl.textDefault, err)
				}
			} else if err := fl.check(def); err != nil {
				t.Errorf("%s: default -%s %v is invalid: %v", name, f, def, err)
			}
		}

		// The defaults are valid and are what resolve fills in.
		o := parseOptions(t, "-optimizer", name, "-model", "logreg")
		if err := o.validate(); err != nil {
			t.Errorf("%s with its defaults: %v", name, err)
			continue
		}
		if o.lr != spec.lr {
			t.Errorf("%s: resolved lr %v, want the table's %v", name, o.lr, spec.lr)
		}
		for f, def := range spec.takes {
			if fl := flagByName(f); fl.text != nil {
				if v := *fl.text(o); v != fl.textDefault {
					t.Errorf("%s: resolved -%s %v, want the flag's default %v", name, f, v, fl.textDefault)
				}
			} else if v := *fl.value(o); v != def {
				t.Errorf("%s: resolved -%s %v, want the table's %v", name, f, v, def)
			}
		}

		// The rule builds and its first step goes against the gradient.
		rule, err := buildRule(o)
		if err != nil || rule == nil {
			t.Errorf("%s: buildRule: %v, %v", name, rule, err)
		} else {
			params, grad := []float64{0, 0, 0}, []float64{1, -2, 0.5}
			if err := rule.Step(params, grad); err != nil {
				t.Errorf("%s: step: %v", name, err)
			}
			if dot := params[0]*grad[0] + params[1]*grad[1] + params[2]*grad[2]; !(dot < 0) {
				t.Errorf("%s: first step moved params to %v, not against the gradient %v", name, params, grad)
			}
		}
		if spec.private {
			m, err := buildModel(o, builtinShape["mnist"], 10, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			p, err := buildPrivacy(o, m)
			if err != nil {
				t.Errorf("%s: buildPrivacy: %v", name, err)
			} else if (p.Smoother != nil) != spec.takesFlag("ls-sigma") {
				t.Errorf("%s: smoother %v, want one iff it takes -ls-sigma", name, p.Smoother)
			}
		}

		// Settings: exactly the flags it takes, the privacy ones iff private, and a
		// round trip through a checkpoint gives the same settings.
		s := o.settings()
		for f := range flagNames {
			if _, ok := s[f]; ok != spec.takesFlag(f) {
				t.Errorf("%s: settings record -%s: %v, want %v", name, f, ok, spec.takesFlag(f))
			}
		}
		for _, f := range []string{"clip", "clipping", "delta"} {
			if _, ok := s[f]; ok != spec.private {
				t.Errorf("%s: settings record -%s: %v, want %v (private)", name, f, ok, spec.private)
			}
		}
		// Non-default values of the flags it takes must be what a resumed run reads back.
		args := []string{"-optimizer", name, "-model", "logreg", "-lr", "0.125"}
		for f := range spec.takes {
			args = append(args, "-"+f, otherValue(f))
		}
		o = parseOptions(t, args...)
		if err := o.validate(); err != nil {
			t.Errorf("%s %v: %v", name, args, err)
			continue
		}
		s = o.settings()
		back := &options{resume: "x"}
		fs := newFlagSet(back)
		back.set = map[string]bool{}
		if err := back.applyCheckpoint(&checkpoint.Training{Settings: s}, fs); err != nil {
			t.Fatal(err)
		}
		back.resolve()
		if got := back.settings(); !maps.Equal(got, s) {
			t.Errorf("%s: settings %v read back from a checkpoint as %v", name, s, got)
		}
		for f := range spec.takes {
			if s[f] != otherValue(f) {
				t.Errorf("%s: -%s %s recorded as %q", name, f, otherValue(f), s[f])
			}
		}

		// Each optimizer flag is accepted iff the optimizer takes it.
		for _, f := range optimizerFlags {
			v := "0.5"
			if f.text != nil {
				v = f.textDefault
			}
			args := []string{"-optimizer", name, "-model", "logreg", "-" + f.name, v}
			if spec.takesFlag(f.name) && (f.name == "adp-beta" || f.name == "adp-c") {
				args = append(args, "-adp-schedule", "adagrad-norm") // refused with the others (TestADPScheduleFlag)
			}
			o := parseOptions(t, args...)
			err := o.validate()
			if spec.takesFlag(f.name) && err != nil {
				t.Errorf("%s -%s %s: %v", name, f.name, v, err)
			}
			if !spec.takesFlag(f.name) && (err == nil || !strings.Contains(err.Error(), "-"+f.name)) {
				t.Errorf("%s -%s %s: error %v, want one naming -%s", name, f.name, v, err, f.name)
			}
		}
		if spec.stepSize != nil {
			o := parseOptions(t, "-optimizer", name, "-model", "logreg", "-lr-schedule", "inverse-time")
			if err := o.validate(); err == nil {
				t.Errorf("%s has its own step size but takes -lr-schedule inverse-time", name)
			}
		}
		if !spec.private {
			valid := map[string]string{"clipping": "flat", "accountant": "rdp"} // else 1
			for _, f := range privacyFlags {
				v := valid[f]
				if v == "" {
					v = "1"
				}
				o := parseOptions(t, "-optimizer", name, "-model", "logreg", "-"+f, v)
				if err := o.validate(); err == nil || !strings.Contains(err.Error(), "not private") {
					t.Errorf("%s -%s: error %v, want 'not private'", name, f, err)
				}
			}
			if twin := lookupOptimizer("dp-" + name); twin == nil || !twin.private {
				t.Errorf("%s: the error message suggests dp-%s, which is not a private optimizer", name, name)
			}
		}
	}
	for _, f := range optimizerFlags {
		line := helpLine(help.String(), f.name)
		for _, spec := range optimizers {
			if spec.takesFlag(f.name) && !strings.Contains(line, spec.name) {
				t.Errorf("-help of -%s does not name %s: %q", f.name, spec.name, line)
			}
			want := func(def float64) string { return strconv.FormatFloat(def, 'g', -1, 64) }
			if f.text != nil {
				want = func(float64) string { return f.textDefault }
			}
			if def, ok := spec.takes[f.name]; ok && !strings.Contains(line, "default "+want(def)) {
				t.Errorf("-help of -%s does not give %s's default %v: %q", f.name, spec.name, want(def), line)
			}
		}
	}
}

// textValues gives each word-valued optimizer flag a valid value other than its default.
var textValues = map[string]string{"ls-axis": "flat", "adp-schedule": "adagrad-norm", "adp-noise": "constant"}

// otherValue is a valid value of optimizer flag name that is not its default.
func otherValue(name string) string {
	if flagByName(name).text != nil {
		return textValues[name]
	}
	return "0.375"
}

func flagByName(name string) optimizerFlag {
	for _, f := range optimizerFlags {
		if f.name == name {
			return f
		}
	}
	panic("no optimizer flag " + name)
}

// helpLine returns the usage text of -name in the -help output.
func helpLine(help, name string) string {
	_, rest, _ := strings.Cut(help, "\n  -"+name+" ")
	line, _, _ := strings.Cut(rest, "\n  -")
	return line
}
