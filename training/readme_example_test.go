package training_test

import (
	"context"
	"fmt"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// Example_readme is README.md's Go example, line for line between the markers (without
// the function's indentation); internal/layering's TestReadmeGoExample checks that the
// two agree, so the README's example always compiles. It has no Output comment, so go
// test compiles it without running it: ExampleTrainer runs the same steps end to end.
func Example_readme() {
	// README:begin
	train, test, _ := mnist.Embedded()                                // 8,000 / 2,000 digits built into the binary
	m, _ := nn.New(models.MNISTCNN(models.Tanh), 128, nn.WithSeed(1)) // physical batch 128
	tr, _ := training.NewTrainer(m, training.TrainerConfig{
		Data:     training.Data{Train: train, Test: test, Name: "mnist-embedded"},
		Rule:     dpoptim.NewAdam(dpoptim.Constant(1e-2)), // made private by Privacy: DP-Adam
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 3, Delta: 1e-5},
		Schedule: training.Schedule{BatchSize: 256, Epochs: 2},
	})
	fmt.Println(tr.Plan()) // q, steps and the noise multiplier calibrated for ε = 3, before any step
	res, _ := tr.Run(context.Background())
	fmt.Printf("test accuracy %.2f %%, ε = %.3f\n", 100*res.TestAccuracy, res.Spent.Epsilon)
	c, _ := tr.Checkpoint()        // parameters, optimizer state, privacy ledger
	checkpoint.Save("run.ckpt", c) // checkpoint.Load + Trainer.Restore resume it
	// README:end
}
