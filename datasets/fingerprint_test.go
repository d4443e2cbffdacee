package datasets

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// tiny is a 2-example data set of shape [1, 2] with 3 classes.
type tiny struct {
	x      [2][2]float32
	labels [2]int
}

func (d *tiny) Len() int        { return 2 }
func (d *tiny) Shape() []int    { return []int{1, 2} }
func (d *tiny) NumClasses() int { return 3 }
func (d *tiny) Example(i int, dst []float32) int {
	copy(dst, d.x[i][:])
	return d.labels[i]
}

func TestContentFingerprintLayout(t *testing.T) {
	d := &tiny{x: [2][2]float32{{1, 0.5}, {0, -2}}, labels: [2]int{2, 0}}
	// The documented layout, written out byte by byte (float32 bits by hand:
	// 1 = 0x3f800000, 0.5 = 0x3f000000, 0 = 0, -2 = 0xc0000000).
	var b []byte
	b = append(b, "privtrain-dataset-v1\x00"...)
	b = append(b, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0) // len(shape), 1, 2
	b = append(b, 3, 0, 0, 0)                         // classes
	b = append(b, 2, 0, 0, 0, 0, 0, 0, 0)             // n
	b = append(b, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x3f, 2, 0, 0, 0)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0)
	sum := sha256.Sum256(b)
	if got, want := ContentFingerprint(d), hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("fingerprint %s, want %s", got, want)
	}
}

func TestContentFingerprintSeesEveryValue(t *testing.T) {
	base := &tiny{x: [2][2]float32{{1, 0.5}, {0, -2}}, labels: [2]int{2, 0}}
	f0 := ContentFingerprint(base)
	pixel := *base
	pixel.x[1][1] = -2.0000002 // one ulp-scale change of one value
	label := *base
	label.labels[1] = 1
	swapped := *base
	swapped.x[0], swapped.x[1] = base.x[1], base.x[0]
	swapped.labels[0], swapped.labels[1] = base.labels[1], base.labels[0]
	for name, d := range map[string]*tiny{"pixel": &pixel, "label": &label, "order": &swapped} {
		if ContentFingerprint(d) == f0 {
			t.Errorf("%s change left the fingerprint unchanged", name)
		}
	}
}
