package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/datasets"
)

// rowsOf returns the examples of ds as strings (values and label), counted.
func rowsOf(ds datasets.Dataset) map[string]int {
	out := map[string]int{}
	x := make([]float32, datasets.Size(ds))
	for i := range ds.Len() {
		l := ds.Example(i, x)
		out[fmt.Sprint(x, l)]++
	}
	return out
}

// moved counts the rows of a (other than skip) that b lacks.
func moved(a, b map[string]int, skip string) int {
	n := 0
	for k, c := range a {
		if k == skip {
			continue
		}
		n += max(c-b[k], 0)
	}
	return n
}

// TestOwnDataSplitNeighbours: the -test-fraction split of csv: data, as train reads it,
// keeps the training part of a file and of the file without any one of its rows (brute
// force over all 80) the same but for that row: the neighbouring files give neighbouring
// training parts, so ε holds per file. The stratified rule of old checkpoints
// (LegacySplit) moves other rows for some removed row (checked, as the reason for the
// change).
func TestOwnDataSplitNeighbours(t *testing.T) {
	const n = 80
	rng := rand.New(rand.NewPCG(1, 1))
	rows := make([]string, n)
	for i := range rows {
		rows[i] = fmt.Sprintf("%.3f,%.3f,%c", 10*rng.Float64(), 10*rng.Float64(), 'a'+rune(i%3))
	}
	dir := t.TempDir()
	write := func(name string, skip int) string {
		var b strings.Builder
		b.WriteString("x,y,kind\n")
		for i, r := range rows {
			if i != skip {
				b.WriteString(r + "\n")
			}
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	load := func(path string, legacy bool) (train, test map[string]int) {
		o := DataFlags{Label: "kind", Header: "auto", Scale: "0:10", TestFraction: 0.25, SplitSeed: 5, Labels: "fine", LegacySplit: legacy}
		tr, te, _, _, err := LoadData("csv:"+path, "", &o)
		if err != nil {
			t.Fatal(err)
		}
		return rowsOf(tr), rowsOf(te)
	}
	whole := write("whole.csv", -1)
	train, test := load(whole, false)
	oldTrain, _ := load(whole, true)
	legacyMoves := 0
	for skip := range n {
		p := write(fmt.Sprintf("without%d.csv", skip), skip)
		gone := ""
		for k := range rowsOf(mustTable(t, p, whole)) {
			gone = k
		}
		train2, test2 := load(p, false)
		if m := moved(train, train2, gone) + moved(train2, train, gone) + moved(test, test2, gone) + moved(test2, test, gone); m != 0 {
			t.Errorf("without row %d: %d other rows change sides", skip, m)
		}
		old2, _ := load(p, true)
		legacyMoves = max(legacyMoves, moved(oldTrain, old2, gone)+moved(old2, oldTrain, gone))
		os.Remove(p)
	}
	if legacyMoves < 2 {
		t.Errorf("the stratified rule moved at most %d other rows for any removed row; want several (the reason for the content hash)", legacyMoves)
	}
}

// mustTable returns the rows of whole that the file at path lacks, as a dataset of one
// example (the removed row), read with the same options.
func mustTable(t *testing.T, path, whole string) datasets.Dataset {
	t.Helper()
	ranges, _ := datasets.ParseRanges("0:10")
	a, err := datasets.LoadCSV(whole, datasets.CSVOptions{Label: "kind", Ranges: ranges})
	if err != nil {
		t.Fatal(err)
	}
	b, err := datasets.LoadCSV(path, datasets.CSVOptions{Label: "kind", Ranges: ranges})
	if err != nil {
		t.Fatal(err)
	}
	rb := rowsOf(b)
	var idx []int
	x := make([]float32, datasets.Size(a))
	for i := range a.Len() {
		l := a.Example(i, x)
		k := fmt.Sprint(x, l)
		if rb[k] > 0 {
			rb[k]--
		} else {
			idx = append(idx, i)
		}
	}
	if len(idx) != 1 {
		t.Fatalf("%s lacks %d rows of %s, want 1", path, len(idx), whole)
	}
	s, _ := datasets.Subset(a, idx)
	return s
}
