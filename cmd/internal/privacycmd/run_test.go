package privacycmd

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
)

func runArgs(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func runJSON(t *testing.T, args ...string) result {
	t.Helper()
	code, out, stderr := runArgs(append(args, "-json")...)
	if code != exit.OK {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
	}
	var r result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: output %q: %v", args, out, err)
	}
	return r
}

// TestEpsilonReference checks the command against the accountant's
// published reference values (Opacus for Balle, TF Privacy's README for
// classic).
func TestEpsilonReference(t *testing.T) {
	r := runJSON(t, "epsilon", "-q", "0.0042666666666666667", "-steps", "14000", "-noise", "1.1", "-delta", "1e-5")
	if math.Abs(r.Epsilon-2.5903769658)/2.5903769658 > 1e-6 || r.Order != 8.1 || r.Steps != 14000 || r.Conversion != "balle" {
		t.Errorf("Opacus case: %+v", r)
	}
	r = runJSON(t, "epsilon", "-n", "60000", "-batch", "256", "-steps", "14040", "-noise", "1.1", "-delta", "1e-5", "-conversion", "classic")
	if math.Abs(r.Epsilon-3.01) > 0.005 || r.SampleRate != 256.0/60000 || r.NoiseMultiplier != 1.1 || r.Delta != 1e-5 {
		t.Errorf("TF README case: %+v", r)
	}
	if r.Orders != 151 || r.MaxOrder != 63 {
		t.Errorf("default orders: %d up to %v", r.Orders, r.MaxOrder)
	}
}

// TestEpsilonStepsFromEpochs: steps = epochs·⌈n/batch⌉, the trainer's count (with -q
// alone an epoch is ⌈1/q⌉ steps; a fractional epoch count rounds the product up).
func TestEpsilonStepsFromEpochs(t *testing.T) {
	for _, c := range []struct {
		args  []string
		steps int
	}{
		{[]string{"-n", "60000", "-batch", "256", "-epochs", "60"}, 14100}, // 60·235 (⌈60·60000/256⌉ would be 14063)
		{[]string{"-n", "1000", "-batch", "100", "-epochs", "10"}, 100},    // exact
		{[]string{"-n", "50000", "-batch", "256", "-epochs", "60"}, 11760}, // 60·196
		{[]string{"-n", "50000", "-batch", "256", "-epochs", "0.5"}, 98},   // ⌈0.5·196⌉
		{[]string{"-q", "0.0042666666666666667", "-epochs", "60"}, 14100},  // ⌈1/q⌉ = 235
		{[]string{"-q", "0.01", "-epochs", "3"}, 300},
		{[]string{"-q", "0.3", "-epochs", "0.1"}, 1},
		{[]string{"-q", "0.3", "-epochs", "2"}, 8}, // ⌈1/0.3⌉ = 4
	} {
		r := runJSON(t, append([]string{"epsilon", "-noise", "1"}, c.args...)...)
		if r.Steps != c.steps {
			t.Errorf("%v: %d steps, want %d", c.args, r.Steps, c.steps)
		}
	}
}

func TestNoise(t *testing.T) {
	r := runJSON(t, "noise", "-n", "60000", "-batch", "256", "-steps", "14040", "-epsilon", "3.01", "-delta", "1e-5", "-conversion", "classic")
	// The README's z = 1.1 gives ε = 3.01 (rounded): z is recovered to 0.5%.
	if math.Abs(r.NoiseMultiplier-1.1)/1.1 > 0.005 || r.Epsilon > 3.01 || r.TargetEpsilon == nil || *r.TargetEpsilon != 3.01 {
		t.Errorf("noise: %+v", r)
	}
	// The reported ε is that of the reported z.
	back := runJSON(t, "epsilon", "-n", "60000", "-batch", "256", "-steps", "14040", "-noise", formatFloat(r.NoiseMultiplier), "-delta", "1e-5", "-conversion", "classic")
	if back.Epsilon != r.Epsilon {
		t.Errorf("ε at the calibrated z: %v, noise reported %v", back.Epsilon, r.Epsilon)
	}
	code, out, _ := runArgs("noise", "-q", "0.01", "-steps", "1000", "-epsilon", "2")
	if code != exit.OK || !strings.Contains(out, "noise_multiplier") || !strings.Contains(out, "target 2") {
		t.Errorf("text output: exit %d, %q", code, out)
	}
}

func formatFloat(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func TestTextOutput(t *testing.T) {
	code, out, stderr := runArgs("epsilon", "-n", "60000", "-batch", "256", "-epochs", "60", "-noise", "1.1", "-delta", "1e-5")
	if code != exit.OK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"epsilon ", "delta ", "order ", "sample_rate ", "steps ", "14100 (60 epochs)", "batch 256 / n 60000", "noise_multiplier  1.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestEdgeWarning(t *testing.T) {
	// The DP-SCD MSD plan at ε ≈ 0.1: the optimum wants orders above 63.
	plan := []string{"epsilon", "-q", "0.0028753", "-steps", "17389", "-noise", "14.23", "-delta", "1e-3"}
	code, _, stderr := runArgs(plan...)
	if code != exit.OK || !strings.Contains(stderr, "largest") || !strings.Contains(stderr, "-max-order") {
		t.Errorf("exit %d, stderr %q: want a warning about the largest order", code, stderr)
	}
	code, _, stderr = runArgs(append(plan, "-max-order", "1024")...)
	if code != exit.OK || stderr != "" {
		t.Errorf("with -max-order 1024: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runArgs("epsilon", "-q", "1", "-steps", "1000", "-noise", "0.3")
	if code != exit.OK || !strings.Contains(stderr, "smallest") {
		t.Errorf("tiny noise: exit %d, stderr %q: want a warning about the smallest order", code, stderr)
	}
}

func TestOrdersFlags(t *testing.T) {
	r := runJSON(t, "epsilon", "-q", "0.01", "-steps", "100", "-noise", "1", "-max-order", "1024")
	if r.Orders != 151+961 || r.MaxOrder != 1024 {
		t.Errorf("-max-order 1024: %d orders up to %v", r.Orders, r.MaxOrder)
	}
	r = runJSON(t, "epsilon", "-q", "0.01", "-steps", "100", "-noise", "1", "-max-order", "32")
	if r.Orders != 99+21 || r.MaxOrder != 32 {
		t.Errorf("-max-order 32: %d orders up to %v", r.Orders, r.MaxOrder)
	}
	r = runJSON(t, "epsilon", "-q", "1", "-steps", "100", "-noise", "5", "-delta", "1e-6", "-orders", "2, 3.5,8")
	// Opacus reference 11.6886267992 is attained at order 3.5.
	if r.Orders != 3 || r.Order != 3.5 || math.Abs(r.Epsilon-11.6886267992) > 1e-8 {
		t.Errorf("-orders: %+v", r)
	}
}

// TestBadInput: exit status 2 and a single line naming the flag.
func TestBadInput(t *testing.T) {
	plan := []string{"-q", "0.01", "-steps", "100"}
	for _, c := range []struct {
		args []string
		flag string
	}{
		{append([]string{"epsilon", "-noise", "0"}, plan...), "-noise"},
		{append([]string{"epsilon", "-noise", "-1"}, plan...), "-noise"},
		{append([]string{"epsilon", "-noise", "NaN"}, plan...), "-noise"},
		{append([]string{"epsilon", "-noise", "abc"}, plan...), "-noise"},
		{append([]string{"epsilon"}, plan...), "-noise"},
		{append([]string{"noise", "-epsilon", "0"}, plan...), "-epsilon"},
		{append([]string{"noise", "-epsilon", "-3"}, plan...), "-epsilon"},
		{append([]string{"noise"}, plan...), "-epsilon"},
		{append([]string{"epsilon", "-noise", "1", "-delta", "0"}, plan...), "-delta"},
		{append([]string{"epsilon", "-noise", "1", "-delta", "1"}, plan...), "-delta"},
		{append([]string{"noise", "-epsilon", "1", "-delta", "1.5"}, plan...), "-delta"},
		{[]string{"epsilon", "-noise", "1", "-q", "0", "-steps", "10"}, "-q"},
		{[]string{"epsilon", "-noise", "1", "-q", "1.5", "-steps", "10"}, "-q"},
		{[]string{"epsilon", "-noise", "1", "-q", "0.1", "-steps", "0"}, "-steps"},
		{[]string{"epsilon", "-noise", "1", "-q", "0.1", "-steps", "-4"}, "-steps"},
		{[]string{"epsilon", "-noise", "1", "-q", "0.1"}, "-epochs"},
		{[]string{"epsilon", "-noise", "1", "-q", "0.1", "-epochs", "0"}, "-epochs"},
		{[]string{"epsilon", "-noise", "1", "-q", "0.1", "-epochs", "2", "-steps", "5"}, "-steps"},
		{[]string{"epsilon", "-noise", "1", "-steps", "10"}, "-q"},
		{[]string{"epsilon", "-noise", "1", "-n", "100", "-steps", "10"}, "-batch"},
		{[]string{"epsilon", "-noise", "1", "-batch", "10", "-steps", "10"}, "-n"},
		{[]string{"epsilon", "-noise", "1", "-n", "100", "-batch", "200", "-steps", "10"}, "-batch"},
		{[]string{"epsilon", "-noise", "1", "-n", "0", "-batch", "1", "-steps", "10"}, "-n"},
		{[]string{"epsilon", "-noise", "1", "-q", "0.1", "-batch", "1", "-n", "10", "-steps", "10"}, "-q"},
		{append([]string{"epsilon", "-noise", "1", "-conversion", "renyi"}, plan...), "-conversion"},
		{append([]string{"epsilon", "-noise", "1", "-max-order", "1"}, plan...), "-max-order"},
		{append([]string{"epsilon", "-noise", "1", "-orders", "2,x"}, plan...), "-orders"},
		{append([]string{"epsilon", "-noise", "1", "-orders", "0.5"}, plan...), "-orders"},
		{append([]string{"epsilon", "-noise", "1", "-orders", "2", "-max-order", "64"}, plan...), "-orders"},
		{append([]string{"epsilon", "-noise", "1", "-frobnicate"}, plan...), "-frobnicate"},
		{append([]string{"epsilon", "-noise", "1", "extra"}, plan...), "extra"},
		{[]string{"frobnicate"}, "frobnicate"},
	} {
		code, out, stderr := runArgs(c.args...)
		if code != exit.Usage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", c.args, code, exit.Usage, stderr)
			continue
		}
		if out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.flag) {
			t.Errorf("%v: stderr %q, stdout %q: want one line naming %s", c.args, stderr, out, c.flag)
		}
	}
	if code, _, stderr := runArgs(); code != exit.Usage || !strings.Contains(stderr, "usage") {
		t.Errorf("no arguments: exit %d, %q", code, stderr)
	}
}

func TestUnreachable(t *testing.T) {
	code, _, stderr := runArgs("noise", "-n", "347786", "-batch", "1000", "-epochs", "50", "-epsilon", "0.1", "-delta", "1e-3", "-conversion", "classic")
	if code != exit.Usage || !strings.Contains(stderr, "-max-order") || strings.Count(stderr, "\n") != 1 { // issue 15: an unreachable target is bad input
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-help"}, {"help"}, {"epsilon", "-help"}, {"noise", "-h"}} {
		code, out, stderr := runArgs(args...)
		if code != exit.OK || stderr != "" || !strings.Contains(out, "usage") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
		if len(args) == 2 && !(strings.Contains(out, "-delta") && strings.Contains(out, "-max-order") && strings.Contains(out, "Example")) {
			t.Errorf("%v: help lacks flags or example:\n%s", args, out)
		}
	}
}

// FuzzRun: no command line panics; bad input gives status 2 and one line.
func FuzzRun(f *testing.F) {
	for _, s := range []string{
		"epsilon -n 60000 -batch 256 -epochs 60 -noise 1.1 -delta 1e-5",
		"noise -q 0.01 -steps 1000 -epsilon 2 -json",
		"epsilon -q 1 -steps 100 -noise 5 -orders 2,3.5,8 -conversion classic",
		"noise -q 0.5 -epochs 3 -epsilon 1e-9 -max-order 100",
		"epsilon -noise 1e-300 -q 1e-300 -steps 2147483647",
		"-help",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		code, out, stderr := runArgs(args...)
		switch code {
		case exit.OK:
		case exit.Usage:
			if len(args) > 0 && strings.Count(stderr, "\n") != 1 && !strings.Contains(stderr, "usage") {
				t.Fatalf("%q: exit 2 with stderr %q", line, stderr)
			}
			if out != "" {
				t.Fatalf("%q: exit 2 with output %q", line, out)
			}
		case exit.Failure:
			if stderr == "" {
				t.Fatalf("%q: exit 1 without a message", line)
			}
		default:
			t.Fatalf("%q: exit %d", line, code)
		}
	})
}

// -accountant: the plan by each accountant. References: Google
// dp_accounting's PLDAccountant (pessimistic, discretisation 1e-4) gives
// 2.3818 and its RDP accountant 2.5967.
func TestAccountantFlag(t *testing.T) {
	plan := []string{"epsilon", "-q", "0.0042666666666666667", "-noise", "1.1", "-steps", "14063", "-delta", "1e-5"}
	pld := runJSON(t, append(plan, "-accountant", "pld")...)
	if r := pld.Epsilon / 2.3818; r < 0.995 || r > 1.02 || pld.Accountant != "pld" || pld.Discretisation != 1e-4 {
		t.Errorf("-accountant pld: %+v, want ε ≈ 2.3818", pld)
	}
	rdp := runJSON(t, append(plan, "-accountant", "rdp")...)
	if math.Abs(rdp.Epsilon-2.5967) > 5e-4 || rdp.Accountant != "rdp" || rdp.PLD != nil {
		t.Errorf("-accountant rdp: %+v, want ε ≈ 2.5967", rdp)
	}
	both := runJSON(t, plan...)
	if both.Epsilon != rdp.Epsilon || both.PLD == nil || both.PLD.Epsilon != pld.Epsilon {
		t.Errorf("default JSON: %+v (pld %+v)", both, both.PLD)
	}
	code, out, stderr := runArgs(plan...)
	if code != exit.OK || stderr != "" || !strings.Contains(out, "2.59666") || !strings.Contains(out, "2.38178") || !strings.Contains(out, "connect-the-dots") {
		t.Errorf("default text: exit %d, stderr %q:\n%s", code, stderr, out)
	}
	// The command prints both accountants; its plan is 60·⌈60000/256⌉ =
	// 14,100 steps (accountant.PlanSteps), a little more than the 14,063 above.
	code, out, stderr = runArgs("epsilon", "-n", "60000", "-batch", "256", "-epochs", "60", "-noise", "1.1")
	if code != exit.OK || stderr != "" || !strings.Contains(out, "rdp") || !strings.Contains(out, "pld") || !strings.Contains(out, "14100") {
		t.Errorf("-n/-batch/-epochs text: exit %d, stderr %q:\n%s", code, stderr, out)
	}
	// Calibration: PLD needs less noise, and its ε at that noise meets the target.
	zp := runJSON(t, "noise", "-q", "0.256", "-steps", "120", "-epsilon", "3", "-accountant", "pld")
	zr := runJSON(t, "noise", "-q", "0.256", "-steps", "120", "-epsilon", "3", "-accountant", "rdp")
	if zp.Epsilon > 3 || zp.NoiseMultiplier >= zr.NoiseMultiplier || math.Abs(zr.NoiseMultiplier-4.3637) > 5e-4 {
		t.Errorf("noise: PLD %+v, RDP %+v", zp, zr)
	}
	back := runJSON(t, "epsilon", "-q", "0.256", "-steps", "120", "-noise", formatFloat(zp.NoiseMultiplier), "-accountant", "pld")
	if back.Epsilon != zp.Epsilon {
		t.Errorf("PLD ε at the calibrated z: %v, noise reported %v", back.Epsilon, zp.Epsilon)
	}
	code, out, stderr = runArgs("epsilon", "-q", "0.1", "-steps", "10", "-noise", "1", "-accountant", "moments")
	if code != exit.Usage || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "-accountant") {
		t.Errorf("bad -accountant: exit %d, stderr %q", code, stderr)
	}
}
