package training_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
	"github.com/privtrain/privtrain/training"
)

// FuzzLoad feeds arbitrary bytes to the checkpoint reader: it must return a checkpoint or
// an error, never panic, and whatever it accepts must save and load again unchanged.
func FuzzLoad(f *testing.F) {
	good := tinyCheckpoint(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Add([]byte("\x28\xb5\x2f\xfd"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := checkpoint.DecodeTraining(bytes.NewReader(data), tensorfile.WithMaxSize(1<<20))
		if err != nil {
			return
		}
		roundTrip(t, c)
	})
}

// FuzzCheckpointMetadata replaces one metadata value of a valid checkpoint and re-encodes
// it with valid checksums, which reaches the training-checkpoint parser that byte-level
// fuzzing rarely gets past the checksums to.
func FuzzCheckpointMetadata(f *testing.F) {
	path, _ := savedCheckpoint(f, f.TempDir(), 1)
	base, err := tensorfile.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	keys := make([]string, 0, len(base.Metadata))
	for k := range base.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	keys = append(keys, "nn.loss") // absent from a cross-entropy checkpoint: the fuzzer adds it
	for i, k := range keys {
		f.Add(uint8(i), base.Metadata[k])
		f.Add(uint8(i), "")
		f.Add(uint8(i), "null")
	}
	f.Add(uint8(len(keys)-1), "focal:2")
	f.Add(uint8(0), `{"n":1e400}`)
	f.Fuzz(func(t *testing.T, key uint8, value string) {
		file := &tensorfile.File{Tensors: base.Tensors, Metadata: map[string]string{}}
		for k, v := range base.Metadata {
			file.Metadata[k] = v
		}
		file.Metadata[keys[int(key)%len(keys)]] = value
		var buf bytes.Buffer
		if err := tensorfile.Encode(&buf, file); err != nil {
			return // not valid UTF-8
		}
		c, err := checkpoint.DecodeTraining(&buf)
		if err != nil {
			return
		}
		roundTrip(t, c)
	})
}

// tinyCheckpoint returns the bytes of a checkpoint of a 10-parameter model (a few KB,
// mostly the ledger), small enough for the fuzzer to mutate quickly.
func tinyCheckpoint(f testing.TB) []byte {
	pixels := make([]byte, 4*20)
	labels := make([]byte, 20)
	for i := range labels {
		labels[i] = byte(i % 2)
		pixels[4*i+i%4] = 255
	}
	train, err := datasets.NewImages([]int{1, 2, 2}, 2, pixels, labels)
	if err != nil {
		f.Fatal(err)
	}
	spec := nn.Spec{Name: "tiny", InputShape: []int{1, 2, 2}, NumClasses: 2, Layers: []layers.Layer{layers.Flatten{}, layers.Dense{Units: 2}}}
	tr := newTrainer(f, newModel(f, spec, 4, nn.WithSeed(1)), training.TrainerConfig{
		Data:     training.Data{Train: train},
		Rule:     dpoptim.NewAdam(dpoptim.Constant(0.1)),
		Schedule: training.Schedule{BatchSize: 5, Epochs: 1},
		Seed:     seedPtr(1),
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5},
	})
	run(f, tr)
	c, err := tr.Checkpoint()
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(f.TempDir(), "tiny.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// roundTrip saves an accepted checkpoint and loads it again.
func roundTrip(t *testing.T, c *checkpoint.Training) {
	path := t.TempDir() + "/again.ckpt"
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatalf("accepted checkpoint does not save: %v", err)
	}
	d, err := checkpoint.Load(path)
	if err != nil {
		t.Fatalf("accepted checkpoint does not load after saving: %v", err)
	}
	if d.Step != c.Step || firstDiff(d.Params, c.Params) >= 0 || d.Plan != c.Plan || d.Loss != c.Loss {
		t.Fatalf("checkpoint changed in a save/load round trip")
	}
}
