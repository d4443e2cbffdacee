package traincmd

import (
	"flag"
	"math"
	"path/filepath"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// TestCheckpointRebuildsData: the settings that a run on csv:PATH or images:DIR writes
// into its checkpoint are enough for cmd/internal/cli (what cmd/evaluate uses) to rebuild
// the run's held-out test split: the model of the checkpoint has there the test
// accuracy and loss that the run reported.
func TestCheckpointRebuildsData(t *testing.T) {
	dir := t.TempDir()
	table := clitest.TableCSV(t, dir, 120)
	images := clitest.ImageFolder(t, dir, 8)
	for _, args := range [][]string{
		{"-dataset", "csv:" + table, "-label", "kind", "-scale", "0:10,0:10,-2:12", "-test-fraction", "0.3", "-split-seed", "5", "-batch", "16"},
		{"-dataset", "images:" + images, "-image-size", "6x5", "-channels", "3", "-model", "logreg", "-test-fraction", "0.25", "-split-seed", "9", "-batch", "6"},
	} {
		ckpt := filepath.Join(t.TempDir(), "m.ckpt")
		s := decodeSummary(t, mustRun(t, append(args, "-optimizer", "sgd", "-lr", "1", "-epochs", "10", "-seed", "1", "-checkpoint", ckpt, "-json")...))
		c, err := checkpoint.Load(ckpt)
		if err != nil {
			t.Fatal(err)
		}
		var own cli.DataFlags
		cli.AddDataFlags(flag.NewFlagSet("x", flag.ContinueOnError), &own) // the defaults
		if err := own.FromSettings(c.Settings, nil); err != nil {
			t.Fatal(err)
		}
		_, test, _, _, err := cli.LoadData(c.Settings["dataset"], "", &own)
		if err != nil {
			t.Fatal(err)
		}
		m, err := nn.ModelFromCheckpoint(c, 64)
		if err != nil {
			t.Fatal(err)
		}
		p := nn.NewPredictor(m)
		L, K, n := p.ExampleLen(), p.NumClasses(), test.Len()
		x := make([]float32, n*L)
		labels := make([]int, n)
		for i := range n {
			labels[i] = test.Example(i, x[i*L:(i+1)*L])
		}
		z := make([]float64, n*K)
		if err := p.Logits(x, z); err != nil {
			t.Fatal(err)
		}
		correct, loss := 0, 0.0
		probs := make([]float64, K)
		for i := range n {
			nn.Softmax(probs, z[i*K:(i+1)*K])
			if nn.Argmax(z[i*K:(i+1)*K]) == labels[i] {
				correct++
			}
			loss -= math.Log(probs[labels[i]])
		}
		acc, loss := float64(correct)/float64(n), loss/float64(n)
		if float64(n) != s["test_examples"].(float64) || acc != s["test_accuracy"].(float64) || math.Abs(loss-s["test_loss"].(float64)) > 1e-5*loss {
			t.Errorf("%s: rebuilt test split: %d examples, accuracy %v, loss %v; the run reported %v, %v, %v",
				args[1], n, acc, loss, s["test_examples"], s["test_accuracy"], s["test_loss"])
		}
	}
}
