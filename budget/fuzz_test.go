package budget

import (
	"testing"
)

// FuzzParseLine: the entry parser never panics, and what it accepts is a valid spend
// whose hash is 64 hex digits.
func FuzzParseLine(f *testing.F) {
	s, err := Open(f.TempDir(), nil)
	if err != nil {
		f.Fatal(err)
	}
	r, err := s.Reserve(testFP, Run{Tool: "t", Name: "n", Delta: 1e-5, Parent: &Parent{Run: "x", Step: 1, Steps: 2}}, gauss(2, 3), 0)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := r.Commit(Spend{RDP: &Curve{Orders: []float64{2, 3}, Values: []float64{0.5, 1}}}); err != nil {
		f.Fatal(err)
	}
	for _, l := range bytesLines(f, s) {
		f.Add(l)
	}
	f.Add([]byte("sha256:" + testFP + ` {"v":1}`))
	f.Add([]byte("hmac-sha256:zz {}"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, line []byte) {
		p, err := parseLine(line)
		if err != nil {
			return
		}
		if !isHex64(p.hash) || p.e.Spend.Validate() != nil {
			t.Errorf("accepted %q", line)
		}
	})
}

func bytesLines(f *testing.F, s *Store) [][]byte {
	l, err := readLedger(s, testFP)
	if err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for i := range l.entries {
		b, _, err := encodeEntry(&l.entries[i], nil)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b[:len(b)-1])
	}
	return out
}
