package cli

import (
	"strings"
	"testing"

	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// A checkpoint of a train -average-iterates run holds only the average: reports call its
// parameters averaged, and -params raw is refused rather than silently giving the average.
func TestParamsOfIterateAverage(t *testing.T) {
	c := &checkpoint.Training{Params: []float64{1, 2}, Settings: map[string]string{training.IterateAverageSetting: "iterate average (uniform)"}}
	if d := ParamsDescription(c); !strings.HasPrefix(d, ParamsAveraged) || !strings.Contains(d, "iterate average (uniform)") {
		t.Errorf("ParamsDescription = %q", d)
	}
	if err := SelectParams(c, ParamsRaw); err == nil || !strings.Contains(err.Error(), "-average-iterates") {
		t.Errorf("-params raw: %v, want a refusal naming -average-iterates", err)
	}
	if err := SelectParams(c, ParamsAveraged); err != nil {
		t.Errorf("-params averaged: %v", err)
	}
	plain := &checkpoint.Training{Params: []float64{1, 2}}
	if d := ParamsDescription(plain); d != ParamsRaw {
		t.Errorf("ParamsDescription of a plain checkpoint = %q, want %q", d, ParamsRaw)
	}
}
