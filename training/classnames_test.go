package training_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

// A checkpoint records the class names of its training set (here the MNIST digits of
// the embedded sample's subset); a checkpoint without them (written before they were
// recorded) loads with none, and names that do not fit the data set are refused.
func TestCheckpointClassNames(t *testing.T) {
	path, c := savedCheckpoint(t, t.TempDir(), 1)
	digits := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	if !slices.Equal(c.ClassNames, digits) {
		t.Fatalf("Checkpoint().ClassNames = %q, want the digits", c.ClassNames)
	}
	base, err := tensorfile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := base.Metadata["nn.class_names"]; got != `["0","1","2","3","4","5","6","7","8","9"]` {
		t.Errorf("nn.class_names = %s", got)
	}
	decode := func(edit func(md map[string]string)) (*checkpoint.Training, error) {
		f := &tensorfile.File{Tensors: base.Tensors, Metadata: map[string]string{}}
		for k, v := range base.Metadata {
			f.Metadata[k] = v
		}
		edit(f.Metadata)
		var buf bytes.Buffer
		if err := tensorfile.Encode(&buf, f); err != nil {
			t.Fatal(err)
		}
		return checkpoint.DecodeTraining(&buf)
	}
	got, err := decode(func(md map[string]string) {})
	if err != nil || !slices.Equal(got.ClassNames, digits) {
		t.Fatalf("ClassNames after a round trip: %q, %v", got.ClassNames, err)
	}
	old, err := decode(func(md map[string]string) { delete(md, "nn.class_names") })
	if err != nil || old.ClassNames != nil {
		t.Fatalf("a checkpoint without class names: %q, %v", old.ClassNames, err)
	}
	nine := `["0","1","2","3","4","5","6","7","8"`
	for _, bad := range []string{
		`null`, `[]`, nine + `]`, nine + `,"9","10"]`, // not one name per class
		nine + `,""]`, nine + `,"9\n"]`, nine + `,"\u001b[2J"]`, // empty, a line break, an escape sequence
		nine + `,"` + strings.Repeat("x", 257) + `"]`, // too long
		nine + `,9]`, `{"0":"0"}`, nine + `,"9"] x`, // not a list of strings
	} {
		if c, err := decode(func(md map[string]string) { md["nn.class_names"] = bad }); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("nn.class_names %.40q: got %q, %v; want ErrInvalid", bad, c.ClassNames, err)
		}
	}
	// Training refuses to write names that would not load.
	c.ClassNames = c.ClassNames[:9]
	if err := checkpoint.Save(t.TempDir()+"/x.ckpt", c); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("Save with 9 names for 10 classes: %v", err)
	}
}
