package checkpoint_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/privtrain/privtrain/nn/checkpoint"
)

func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "checkpoint-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.ckpt")

	f := &checkpoint.File{
		Tensors: map[string]checkpoint.Tensor{
			"dense.w": checkpoint.F32([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
			"step":    checkpoint.I64(nil, []int64{600}),
		},
		Metadata: map[string]string{"model": "logreg"},
	}
	if err := checkpoint.WriteFile(path, f); err != nil {
		log.Fatal(err)
	}

	g, err := checkpoint.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	w, err := g.Tensors["dense.w"].Float32s()
	if err != nil {
		log.Fatal(err)
	}
	step, err := g.Tensors["step"].Int64s()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.Tensors["dense.w"].Shape, w, step[0], g.Metadata["model"])
	// Output: [2 3] [1 2 3 4 5 6] 600 logreg
}

func ExampleReadFile_errors() {
	dir, err := os.MkdirTemp("", "checkpoint-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(path, []byte("hello"), 0o600); err != nil {
		log.Fatal(err)
	}
	_, err = checkpoint.ReadFile(path)
	fmt.Println(errors.Is(err, checkpoint.ErrNotCheckpoint))
	// Output: true
}
