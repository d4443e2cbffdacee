package accountant

import (
	"math"
	"testing"
)

// closeRel reports whether got is within rel relative error of want (or
// within rel absolutely when want is 0).
func closeRel(got, want, rel float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-300) || (want == 0 && math.Abs(got) <= rel)
}

// TestLogErfcReference compares with log(erfc(x)) evaluated by mpmath at 40
// digits (testdata/reference.py), across both branches and deep into the
// range where erfc itself underflows float64.
func TestLogErfcReference(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{-30, 0.69314718055994530942},
		{-3, 0.69313613525044681032},
		{0, 0},
		{0.5, -0.73501112983708440303},
		{1, -1.8496055099332482486},
		{5, -27.200889545537434422},
		{10, -102.87988902484488857},
		{19.5, -383.7940900381005038},
		{20, -403.56934333410423496},
		{20.5, -423.84397607879115818},
		{25, -628.79203917407168537},
		{27, -732.86888650789741098},
		{30, -903.97411711064387808},
		{100, -10005.177585122664333},
		{1000, -1000007.4801207219062},
		{1e5, -10000000012.085290408},
	} {
		if got := logErfc(c.x); !closeRel(got, c.want, 1e-14) {
			t.Errorf("logErfc(%v) = %.17g, want %.17g (rel err %.2g)", c.x, got, c.want, math.Abs(got-c.want)/math.Abs(c.want))
		}
	}
	if got := logErfc(math.Inf(1)); !math.IsInf(got, -1) {
		t.Errorf("logErfc(+Inf) = %v, want -Inf", got)
	}
}

// TestLogErfcSwitchover checks that the asymptotic series and math.Erfc
// agree where both are accurate, so the switch at logErfcSwitch leaves no
// step.
func TestLogErfcSwitchover(t *testing.T) {
	for x := 12.0; x <= 26; x += 0.25 {
		direct := math.Log(math.Erfc(x))
		series := logErfcAsymptotic(x)
		if !closeRel(series, direct, 2e-15) {
			t.Errorf("x = %v: series %.17g, math.Erfc %.17g", x, series, direct)
		}
	}
	below, above := logErfc(math.Nextafter(logErfcSwitch, 0)), logErfc(logErfcSwitch)
	if !(below > above) || below-above > 1e-12 {
		t.Errorf("step at the switch: %.17g then %.17g", below, above)
	}
}

// TestLogErfcContinuedFraction compares, for x ≥ 2, with the Laplace
// continued fraction erfc(x) = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))),
// evaluated backwards in log space: an independent route for large x.
func TestLogErfcContinuedFraction(t *testing.T) {
	for _, x := range []float64{2, 3.5, 7, 15, 19.99, 20.01, 33, 250, 4e3} {
		f := x
		for k := 400; k >= 1; k-- {
			f = x + float64(k)/2/f
		}
		want := -x*x - 0.5*math.Log(math.Pi) - math.Log(f)
		if got := logErfc(x); !closeRel(got, want, 1e-13) {
			t.Errorf("logErfc(%v) = %.17g, continued fraction %.17g", x, got, want)
		}
	}
}

func TestLogSpaceHelpers(t *testing.T) {
	for _, x := range []float64{-800, -40, -1, 0, 1e-10, 0.5, 3, 40, 800} {
		if got, want := log1pExp(x), math.Log1p(math.Exp(x)); !math.IsInf(want, 1) && !closeRel(got, want, 1e-15) {
			t.Errorf("log1pExp(%v) = %v, want %v", x, got, want)
		}
	}
	if got := log1pExp(800); got != 800 {
		t.Errorf("log1pExp(800) = %v", got)
	}
	for _, x := range []float64{1e-300, 1e-10, 0.5, 1, 2, 39, 41, 700} {
		if got, want := logExpm1(x), math.Log(math.Expm1(x)); !closeRel(got, want, 1e-15) {
			t.Errorf("logExpm1(%v) = %v, want %v", x, got, want)
		}
	}
	if d, neg := logDiffExp(math.Log(5), math.Log(3)); !closeRel(d, math.Log(2), 1e-15) || neg {
		t.Errorf("logDiffExp(log 5, log 3) = %v, %v", d, neg)
	}
	if d, neg := logDiffExp(math.Log(3), math.Log(5)); !closeRel(d, math.Log(2), 1e-15) || !neg {
		t.Errorf("logDiffExp(log 3, log 5) = %v, %v", d, neg)
	}
	s := newLogSum()
	for _, v := range []float64{1e-300, 3, -1, 0.25, -0.125} {
		s.add(math.Log(math.Abs(v)), v < 0)
	}
	if got := s.log(); !closeRel(got, math.Log(2.125), 1e-15) {
		t.Errorf("logSum = %v, want log 2.125", got)
	}
	big := newLogSum()
	big.add(1000, false)
	big.add(1000+math.Log(3), false)
	if got := big.log(); !closeRel(got, 1000+math.Log(4), 1e-15) {
		t.Errorf("logSum of e^1000 + 3e^1000 = %v", got)
	}
	s.add(math.NaN(), false)
	if !math.IsNaN(s.log()) {
		t.Error("NaN term not propagated")
	}
	neg := newLogSum()
	neg.add(0, true)
	if !math.IsInf(neg.log(), -1) {
		t.Error("negative sum should log to -Inf")
	}
}
