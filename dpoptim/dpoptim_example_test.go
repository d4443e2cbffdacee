package dpoptim_test

import (
	"fmt"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/smoothing"
)

// DP-LSSGD with the TF Privacy MNIST tutorial's privacy plan: q = 256/60000, z = 1.1,
// 60 epochs of 234 steps. The clipped sums would come from package clipping; here a
// constant stands in for them. With the classic RDP-to-DP conversion the ledger reproduces
// the tutorial's ε = 3.01 at δ = 1e-5.
func ExamplePrivate() {
	layout := []smoothing.Tensor{{Name: "W", Shape: []int{2, 3}}, {Name: "b", Shape: []int{2}}}
	lap, err := smoothing.NewLaplacian[float64](1.0, layout)
	if err != nil {
		fmt.Println(err)
		return
	}
	ledger := accountant.NewLedger(accountant.WithConversion(accountant.Classic))
	step, err := dpoptim.NewPrivate(dpoptim.NewSGD(dpoptim.Constant(0.15)), dpoptim.PrivateConfig{
		NoiseMultiplier: 1.1,
		ClipNorm:        1,
		SampleRate:      256.0 / 60000,
		DatasetSize:     60000,
		Recorder:        ledger,
		Smoother:        lap,
		Noise:           dpoptim.NewSeededNoise(42), // reproducible; omit for crypto/rand
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	params := make([]float64, 8)
	clippedSum := []float64{0.5, -0.5, 1, 0, 0.25, -1, 2, 0}
	for range 60 * 234 {
		if err := step.Step(params, clippedSum, 256); err != nil {
			fmt.Println(err)
			return
		}
	}
	spent, err := ledger.Epsilon(1e-5)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s, noise %s, %d steps: ε = %.2f at δ = 1e-5\n", step.Name(), step.Noise(), ledger.Steps(), spent.Epsilon)
	// Output: DP-LSSGD, noise seeded(42), 14040 steps: ε = 3.01 at δ = 1e-5
}

// ADP-SGD with the polynomial step η_t = 1/√(20+t): calibrate the base noise multiplier
// so that the whole schedule, whose multiplier z·(20+t)^(1/4) grows every step, spends
// ε = 2 at δ = 1e-5.
func ExampleCalibrateSchedule() {
	rule := &dpoptim.ADPPolynomial{Eta: 1, A: 19, C: 1}
	z, eps, err := dpoptim.CalibrateSchedule(rule, 0.1, 8, 2, 1e-5)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("z_0/z = %.4f, z_7/z = %.4f, spent ε ≤ 2: %v\n", z*rule.NoiseScale(0)/z, z*rule.NoiseScale(7)/z, eps <= 2)
	// Output: z_0/z = 2.1147, z_7/z = 2.2795, spent ε ≤ 2: true
}
