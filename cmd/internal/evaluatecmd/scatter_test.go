package evaluatecmd

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/models"
)

// writeIDX writes ds (1×28×28 images in [0, 1]) as the uncompressed IDX pair images,
// labels in dir.
func writeIDX(t *testing.T, dir, images, labels string, ds datasets.Dataset) {
	t.Helper()
	var img, lab bytes.Buffer
	n := ds.Len()
	for _, v := range []uint32{0x803, uint32(n), 28, 28} {
		binary.Write(&img, binary.BigEndian, v)
	}
	for _, v := range []uint32{0x801, uint32(n)} {
		binary.Write(&lab, binary.BigEndian, v)
	}
	x := make([]float32, 784)
	for i := range n {
		l := ds.Example(i, x)
		for _, p := range x {
			img.WriteByte(byte(math.Round(float64(p) * 255)))
		}
		lab.WriteByte(byte(l))
	}
	for name, b := range map[string][]byte{images: img.Bytes(), labels: lab.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEvaluateScatterModel: a saved ScatterNet model (its Scattering2D front end stored
// in the checkpoint) evaluates raw images, and its metrics are the trainer's evaluation of
// the same model on the same images.
func TestEvaluateScatterModel(t *testing.T) {
	train, test := clitest.MNIST(t, 128)
	small, err := datasets.StratifiedSubset(test, 40)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ckpt := clitest.Checkpoint(t, dir, models.ScatterLinearMNIST(), train)
	writeIDX(t, dir, mnist.TrainImages, mnist.TrainLabels, small)
	writeIDX(t, dir, mnist.TestImages, mnist.TestLabels, small)
	r := evaluateJSON(t, "-checkpoint", ckpt, "-dataset", "fashion-mnist", "-data", dir, "-json")
	loss, acc := trainerEvaluate(t, ckpt, train, small, 16)
	if r.Examples != 40 || r.Model != "scatter-linear-mnist" || math.Abs(r.Accuracy-acc) > 1e-12 || math.Abs(r.Loss-loss) > 1e-5*loss {
		t.Errorf("report %+v; trainer's evaluation: accuracy %v, loss %v", r, acc, loss)
	}
}
