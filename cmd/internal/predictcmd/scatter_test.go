package predictcmd

import (
	"image"
	"math"
	"path/filepath"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/scatter"
)

// TestPredictScatterModel: predict takes raw images for a saved ScatterNet model and gives
// the logits of its trainable part applied to scatter.Transform's features of them.
func TestPredictScatterModel(t *testing.T) {
	train, test := clitest.MNIST(t, 128)
	dir := t.TempDir()
	ckpt := clitest.Checkpoint(t, dir, models.ScatterLinearMNIST(), train)
	const n = 3
	var files []string
	x := make([]float32, n*784)
	for i := range n {
		test.Example(i, x[i*784:(i+1)*784])
		files = append(files, filepath.Join(dir, string(rune('a'+i))+".png"))
		writeGray(t, files[i], x[i*784:(i+1)*784])
	}
	code, stdout, stderr := runPredict(append([]string{"-checkpoint", ckpt, "-json"}, files...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := parseLines(t, stdout)
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	// Reference: the features by package scatter, the network without its front end.
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	spec := models.ScatterLinearMNIST()
	spec.InputShape, spec.Layers = []int{81, 7, 7}, spec.Layers[1:]
	ref, err := nn.New(spec, n, nn.WithDType(nn.DTypeOf(c.DType)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.SetParams(c.Params); err != nil {
		t.Fatal(err)
	}
	feats, err := scatter.Transform(2, 8, x, 1, 28, 28)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, n*10)
	if err := ref.Logits(nn.Batch{X: feats}, want); err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		for k, z := range l.Logits {
			if math.Abs(z-want[i*10+k]) > 1e-4*(1+math.Abs(want[i*10+k])) {
				t.Fatalf("image %d logit %d = %v, want %v", i, k, z, want[i*10+k])
			}
		}
	}
}

// writeGray writes one 28×28 image of values in [0, 1] as a gray PNG.
func writeGray(t *testing.T, path string, x []float32) {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 28, 28))
	for j, v := range x {
		img.Pix[j] = byte(math.Round(float64(v) * 255))
	}
	writePNG(t, path, img)
}
