#!/bin/bash
# stages.sh: CPU time per training step of the previous (Gorgonia) engine and of the
# native engine with its assembly kernels switched off step by step, interleaved, compared
# with benchstat. Usage, from the repository root: bench/stages.sh [rounds] (default 6).
#
#   1-gorgonia          commit f56f2c0, Gorgonia graphs and gonum (its BenchmarkStep, with
#                       today's bench_test.go for the cpu-ms/op metric)
#   2-native-noasm      GODEBUG=cpu.avx512f=off,cpu.avx2=off: Go loops and gonum's GEMM
#   2b-native-openblas  the same with -tags openblas (needs libopenblas-dev and cgo)
#   3-native-avx2       GODEBUG=cpu.avx512f=off: the AVX2 kernels
#   4-native-avx512     the default build
set -euo pipefail
rounds=${1:-6}
root=$(pwd)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add -q "$tmp/base" f56f2c0
cp models/bench_test.go "$tmp/base/models/bench_test.go"
(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./models)
go test -c -o "$tmp/head.test" ./models
CGO_LDFLAGS=-lopenblas go test -c -tags openblas -o "$tmp/openblas.test" ./models
B='^BenchmarkStep$/.*/.*/B=256$'
cd "$tmp"
for i in $(seq 1 "$rounds"); do
	./base.test -test.run '^$' -test.bench "$B" -test.benchtime 20x -test.benchmem >>1-gorgonia.txt
	GODEBUG=cpu.avx512f=off,cpu.avx2=off ./head.test -test.run '^$' -test.bench "$B" -test.benchtime 20x -test.benchmem >>2-native-noasm.txt
	GODEBUG=cpu.avx512f=off,cpu.avx2=off OPENBLAS_NUM_THREADS=1 ./openblas.test -test.run '^$' -test.bench "$B" -test.benchtime 20x -test.benchmem >>2b-native-openblas.txt
	GODEBUG=cpu.avx512f=off ./head.test -test.run '^$' -test.bench "$B" -test.benchtime 100x -test.benchmem >>3-native-avx2.txt
	./head.test -test.run '^$' -test.bench "$B" -test.benchtime 200x -test.benchmem >>4-native-avx512.txt
done
for unit in cpu-ms/op examples/s allocs/op B/op; do
	(cd "$root" && go tool benchstat -filter ".unit:$unit" "$tmp"/1-gorgonia.txt "$tmp"/2-native-noasm.txt \
		"$tmp"/2b-native-openblas.txt "$tmp"/3-native-avx2.txt "$tmp"/4-native-avx512.txt)
done
