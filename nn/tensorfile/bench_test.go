package tensorfile_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/privtrain/privtrain/nn/tensorfile"
)

// benchFile is a checkpoint of n float32 parameters with Adam's two float64 moments,
// filled with Gaussian values so that compression sees realistic, incompressible-ish
// mantissas.
func benchFile(n int) *tensorfile.File {
	r := rand.New(rand.NewPCG(1, 2))
	p := make([]float32, n)
	m, v := make([]float64, n), make([]float64, n)
	for i := range p {
		p[i] = float32(r.NormFloat64() * 0.05)
		m[i] = r.NormFloat64() * 1e-3
		v[i] = r.ExpFloat64() * 1e-6
	}
	return &tensorfile.File{Tensors: map[string]tensorfile.Tensor{
		"params": tensorfile.F32([]int{n}, p),
		"adam.m": tensorfile.F64([]int{n}, m),
		"adam.v": tensorfile.F64([]int{n}, v),
	}}
}

func rawSize(f *tensorfile.File) int64 {
	var n int64
	for _, t := range f.Tensors {
		n += int64(len(t.Data))
	}
	return n
}

var benchSizes = []int{26_000, 1_000_000} // ≈ the MNIST CNN of the seed papers; a larger model

func BenchmarkEncode(b *testing.B) {
	for _, n := range benchSizes {
		f := benchFile(n)
		b.Run(fmt.Sprintf("params=%d", n), func(b *testing.B) {
			b.SetBytes(rawSize(f))
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				if err := tensorfile.Encode(&out, f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(out.Len())/float64(rawSize(f)), "ratio")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, n := range benchSizes {
		f := benchFile(n)
		var enc bytes.Buffer
		if err := tensorfile.Encode(&enc, f); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("params=%d", n), func(b *testing.B) {
			b.SetBytes(rawSize(f))
			for b.Loop() {
				if _, err := tensorfile.Decode(bytes.NewReader(enc.Bytes())); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteFile includes the fsyncs, which dominate on small checkpoints.
func BenchmarkWriteFile(b *testing.B) {
	f := benchFile(benchSizes[0])
	path := filepath.Join(b.TempDir(), "run.ckpt")
	b.SetBytes(rawSize(f))
	for b.Loop() {
		if err := tensorfile.WriteFile(path, f); err != nil {
			b.Fatal(err)
		}
	}
}
