package accountant_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/privtrain/privtrain/accountant"
)

// A DP-SGD run on MNIST: batches of 256 out of 60,000 examples, noise
// multiplier 1.1, 14,000 steps. Opacus reports ε = 2.590 at order 8.1.
func ExampleLedger() {
	ledger := accountant.NewLedger()
	for range 14 {
		// … 1,000 training steps, each adding N(0, (1.1·C)²) noise …
		if err := ledger.Record(256.0/60000, 1.1, 1000); err != nil {
			log.Fatal(err)
		}
	}
	spent, err := ledger.Epsilon(1e-5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ε = %.3f at δ = %g (order %v) after %d steps\n", spent.Epsilon, spent.Delta, spent.Order, ledger.Steps())
	// Output: ε = 2.590 at δ = 1e-05 (order 8.1) after 14000 steps
}

// The TF Privacy README's MNIST tutorial numbers use the classic conversion.
func ExampleWithConversion() {
	ledger := accountant.NewLedger(accountant.WithConversion(accountant.Classic))
	if err := ledger.Record(256.0/60000, 1.1, 60*234); err != nil {
		log.Fatal(err)
	}
	spent, _ := ledger.Epsilon(1e-5)
	fmt.Printf("ε = %.2f\n", spent.Epsilon)
	// Output: ε = 3.01
}

// The noise for ε = 1 over 60 epochs of MNIST with batch 256, and a
// small-ε target that needs orders beyond the default 63.
func ExampleCalibrateNoise() {
	q, steps := 256.0/60000, 60*60000/256
	z, eps, err := accountant.CalibrateNoise(q, steps, 1, 1e-5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("z = %.3f gives ε = %.4f\n", z, eps)

	_, _, err = accountant.CalibrateNoise(q, steps, 0.05, 1e-5)
	fmt.Println(err != nil)
	z, eps, err = accountant.CalibrateNoise(q, steps, 0.05, 1e-5, accountant.WithOrders(accountant.OrdersUpTo(1024)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("z = %.2f gives ε = %.4f\n", z, eps)
	// Output:
	// z = 2.178 gives ε = 1.0000
	// true
	// z = 32.54 gives ε = 0.0500
}

// A ledger goes into a checkpoint as JSON and continues where it stopped.
func ExampleLedger_MarshalJSON() {
	ledger := accountant.NewLedger()
	_ = ledger.Record(0.01, 1.0, 500)
	data, err := json.Marshal(ledger)
	if err != nil {
		log.Fatal(err)
	}

	var resumed accountant.Ledger
	if err := json.Unmarshal(data, &resumed); err != nil {
		log.Fatal(err)
	}
	_ = resumed.Record(0.01, 1.0, 500)
	_ = ledger.Record(0.01, 1.0, 500)
	a, _ := resumed.Epsilon(1e-5)
	b, _ := ledger.Epsilon(1e-5)
	fmt.Println(resumed.Steps(), a == b)
	// Output: 1000 true
}
