package nn_test

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// FuzzLoad feeds arbitrary bytes to the checkpoint reader: it must return a checkpoint or
// an error, never panic, and whatever it accepts must save and load again unchanged.
func FuzzLoad(f *testing.F) {
	path, _ := savedCheckpoint(f, f.TempDir(), 1)
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Add([]byte("\x28\xb5\x2f\xfd"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := nn.Decode(bytes.NewReader(data))
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
	base, err := checkpoint.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	keys := make([]string, 0, len(base.Metadata))
	for k := range base.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		f.Add(uint8(i), base.Metadata[k])
		f.Add(uint8(i), "")
		f.Add(uint8(i), "null")
	}
	f.Add(uint8(0), `{"n":1e400}`)
	f.Fuzz(func(t *testing.T, key uint8, value string) {
		file := &checkpoint.File{Tensors: base.Tensors, Metadata: map[string]string{}}
		for k, v := range base.Metadata {
			file.Metadata[k] = v
		}
		file.Metadata[keys[int(key)%len(keys)]] = value
		var buf bytes.Buffer
		if err := checkpoint.Encode(&buf, file); err != nil {
			return // not valid UTF-8
		}
		c, err := nn.Decode(&buf)
		if err != nil {
			return
		}
		roundTrip(t, c)
	})
}

// roundTrip saves an accepted checkpoint and loads it again.
func roundTrip(t *testing.T, c *nn.Checkpoint) {
	path := t.TempDir() + "/again.ckpt"
	if err := nn.Save(path, c); err != nil {
		t.Fatalf("accepted checkpoint does not save: %v", err)
	}
	d, err := nn.Load(path)
	if err != nil {
		t.Fatalf("accepted checkpoint does not load after saving: %v", err)
	}
	if d.Step != c.Step || firstDiff(d.Params, c.Params) >= 0 || d.Plan != c.Plan {
		t.Fatalf("checkpoint changed in a save/load round trip")
	}
}
