package nn

import (
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestGorgoniaSmoke builds and runs a tiny graph with a gradient. Every binary that imports
// Gorgonia v0.9.18 panics at start on Go ≥ 1.22 unless go.mod upgrades
// go4.org/unsafe/assume-no-moving-gc (see ../shared/docs/gorgonia-notes.md), so this test
// failing to even start means that pin regressed.
func TestGorgoniaSmoke(t *testing.T) {
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, 3, 4}))))
	// loss = Σ (x ⊙ x); d loss/dx = 2x.
	loss := G.Must(G.Sum(G.Must(G.HadamardProd(x, x))))
	if _, err := G.Grad(loss, x); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	if got := loss.Value().Data().(float64); got != 30 {
		t.Fatalf("loss = %v, want 1+4+9+16 = 30", got)
	}
	grad, err := x.Grad()
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{2, 4, 6, 8}
	for i, v := range grad.Data().([]float64) {
		if v != want[i] {
			t.Fatalf("grad[%d] = %v, want %v", i, v, want[i])
		}
	}
}
