package predictcmd

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// A checkpoint without class names (written before checkpoints recorded them) gets the
// names of the built-in data set it was trained on, and class numbers otherwise; the
// CSV output's label column and -json's label agree.
func TestPredictLabelsOfOldCheckpoints(t *testing.T) {
	dir := t.TempDir()
	train, test := clitest.MNIST(t, 128)
	ckpt := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	c.ClassNames = nil
	imgs := filepath.Join(dir, "x.csv")
	var rows strings.Builder
	x := make([]float32, 784)
	for i := range 12 {
		test.Example(i, x)
		for j, v := range x {
			if j > 0 {
				rows.WriteByte(',')
			}
			rows.WriteString(strconv.FormatFloat(float64(v), 'g', -1, 32))
		}
		rows.WriteByte('\n')
	}
	writeFile(t, imgs, rows.String())
	garments := []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
	for _, tc := range []struct {
		dataset string
		label   func(class int) string
	}{
		{"fashion-mnist", func(k int) string { return garments[k] }},
		{"random", strconv.Itoa},
	} {
		c.Dataset.Name = tc.dataset
		old := filepath.Join(dir, tc.dataset+".ckpt")
		if err := checkpoint.Save(old, c); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runPredict("-checkpoint", old, "-json", imgs)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		lines := parseLines(t, stdout)
		classes := map[int]bool{}
		for _, l := range lines {
			classes[l.Class] = true
			if l.Label != tc.label(l.Class) {
				t.Errorf("%s: class %d label %q, want %q", tc.dataset, l.Class, l.Label, tc.label(l.Class))
			}
		}
		if len(classes) < 2 {
			t.Errorf("%s: one class predicted for 12 digits: the test checks little", tc.dataset)
		}
		code, stdout, stderr = runPredict("-checkpoint", old, imgs)
		recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
		if code != 0 || err != nil || len(recs) != len(lines)+1 || !slices.Equal(recs[0][:3], []string{"input", "class", "label"}) {
			t.Fatalf("%s: CSV output: exit %d, %v, %q (%s)", tc.dataset, code, err, stdout, stderr)
		}
		for i, r := range recs[1:] {
			if r[1] != strconv.Itoa(lines[i].Class) || r[2] != lines[i].Label {
				t.Errorf("%s: CSV row %d: %q; -json: class %d label %q", tc.dataset, i, r[:3], lines[i].Class, lines[i].Label)
			}
		}
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
