package models

import (
	"testing"

	"github.com/privtrain/privtrain/nn"
)

// TestResidualParameterCounts: the residual models' parameter counts worked out by hand
// from their architectures (conv k²·c·f + f, GroupNorm 2c, dense in·out + out), and their
// per-layer clipping groups, one per parametrised layer nested or not.
func TestResidualParameterCounts(t *testing.T) {
	conv := func(c, k, f int) int { return k*k*c*f + f }
	gn := func(c int) int { return 2 * c }
	dense := func(in, out int) int { return in*out + out }
	wrnGroup := func(in, w int) int {
		first := gn(in) + conv(in, 3, w) + gn(w) + conv(w, 3, w) + conv(in, 1, w)
		second := gn(w) + conv(w, 3, w) + gn(w) + conv(w, 3, w)
		return first + second
	}
	wrn := conv(3, 3, 16) + wrnGroup(16, 64) + wrnGroup(64, 128) + wrnGroup(128, 256) + gn(256) + dense(256, 10)
	nb := func(c, f int) int { return 9 * c * f } // Klause's convs have no bias
	klause := nb(3, 64) + gn(64) + nb(64, 128) + gn(128) + 2*(nb(128, 128)+gn(128)) + gn(128) +
		nb(128, 256) + gn(256) + nb(256, 256) + gn(256) + 2*(nb(256, 256)+gn(256)) + gn(256) + dense(256*2*2, 10)
	wide := conv(1, 3, 32) + gn(32) + conv(32, 3, 32) + gn(32) +
		conv(32, 3, 32) + gn(32) + conv(32, 3, 32) + gn(32) +
		conv(32, 3, 64) + gn(64) + conv(64, 3, 64) + conv(32, 1, 64) + gn(64) + dense(64, 10)
	res := conv(1, 3, 16) + gn(16) + conv(16, 3, 16) + gn(16) +
		conv(16, 3, 16) + gn(16) + conv(16, 3, 16) + gn(16) +
		conv(16, 3, 32) + gn(32) + conv(32, 3, 32) + conv(16, 1, 32) + gn(32) + dense(32*3*3, 10)
	for _, tc := range []struct {
		spec   nn.Spec
		total  int
		groups int
	}{
		{WRN164(), wrn, 1 + 3*9 + 2},
		{ResNetKlause(), klause, 4 + 5 + 4 + 5 + 1},
		{WideCNN28(), wide, 4 + 4 + 5 + 1},
		{ResCNN28(), res, 4 + 4 + 5 + 1},
	} {
		m, err := nn.New(tc.spec, 1)
		if err != nil {
			t.Fatal(err)
		}
		if m.NumParams() != tc.total || len(m.ParamLayers()) != tc.groups {
			t.Errorf("%s: %d parameters in %d groups, want %d in %d", tc.spec.Name, m.NumParams(), len(m.ParamLayers()), tc.total, tc.groups)
		}
		if m.Engine() != nn.EngineNative {
			t.Errorf("%s runs on %v: %s", tc.spec.Name, m.Engine(), m.EngineReason())
		}
	}
	if wrn != 2751146 || klause != 2448714 || wide != 86762 || res != 24698 {
		t.Errorf("counts %d, %d, %d, %d; the documented 2,751,146, 2,448,714, 86,762, 24,698", wrn, klause, wide, res)
	}
}
