package tensorfile_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/privtrain/privtrain/nn/tensorfile"
)

func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "checkpoint-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.ckpt")

	f := &tensorfile.File{
		Tensors: map[string]tensorfile.Tensor{
			"dense.w": tensorfile.F32([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
			"step":    tensorfile.I64(nil, []int64{600}),
		},
		Metadata: map[string]string{"model": "logreg"},
	}
	if err := tensorfile.WriteFile(path, f); err != nil {
		log.Fatal(err)
	}

	g, err := tensorfile.ReadFile(path)
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
	_, err = tensorfile.ReadFile(path)
	fmt.Println(errors.Is(err, tensorfile.ErrNotCheckpoint))
	// Output: true
}
