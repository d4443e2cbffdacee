package audit

import (
	"context"
	"os"
	"strconv"
	"testing"
)

func TestExplore(t *testing.T) {
	if os.Getenv("AUDIT_EXPLORE") == "" {
		t.Skip()
	}
	eps, _ := strconv.ParseFloat(os.Getenv("EPS"), 64)
	m, _ := strconv.Atoi(os.Getenv("M"))
	ep, _ := strconv.Atoi(os.Getenv("EP"))
	for s := uint64(1); s <= 3; s++ {
		res, err := Run(context.Background(), Config{Seed: &s, Epsilon: eps, Canaries: m, Epochs: ep})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", res)
	}
}
