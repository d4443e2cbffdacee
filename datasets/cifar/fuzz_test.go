package cifar

import (
	"bytes"
	"errors"
	"testing"
)

func FuzzDecodeRecords(f *testing.F) {
	f.Add(batch10(0, 2), false)
	f.Add(batch100(0, 2), true)
	f.Add(batch10(0, 2)[:4000], false)
	f.Add([]byte{10}, false)
	f.Add(append([]byte{19, 99}, image(0)...), true)
	f.Fuzz(func(t *testing.T, data []byte, hundred bool) {
		fm := cifar10
		if hundred {
			fm = cifar100
		}
		var sp split
		sp.init(fm, 0)
		err := decodeRecords(bytes.NewReader(data), int64(len(data)), fm, &sp)
		if err != nil {
			if !errors.Is(err, ErrRecordSize) && !errors.Is(err, ErrLabelRange) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		n := len(data) / fm.recordBytes()
		if len(data)%fm.recordBytes() != 0 || len(sp.pixels) != n*3072 {
			t.Fatalf("%d bytes decoded into %d pixel bytes", len(data), len(sp.pixels))
		}
		for k, c := range fm.classes {
			for i, l := range sp.labels[k] {
				if int(l) >= c || l != data[i*fm.recordBytes()+k] {
					t.Fatalf("record %d: label %d", i, l)
				}
			}
		}
	})
}

func FuzzReadArchive(f *testing.F) {
	f.Add(tarGz(f, cifar10.dir, cifar10Files()), false)
	f.Add(tarGz(f, cifar100.dir, map[string][]byte{"train.bin": batch100(0, 2), "test.bin": batch100(0, 1)}), true)
	f.Add([]byte{0x1f, 0x8b, 8, 0}, false)
	partial := cifar10Files()
	partial["data_batch_3.bin"] = batch10(8, 1) // a partial file, shorter than the others
	f.Add(tarGz(f, cifar10.dir, partial), false)
	f.Fuzz(func(t *testing.T, data []byte, hundred bool) {
		fm := cifar10
		if hundred {
			fm = cifar100
		}
		s, err := readArchive(bytes.NewReader(data), "fuzz.tar.gz", fm)
		if err != nil {
			return
		}
		total := 0
		for _, sp := range []split{s.train, s.test} {
			if len(sp.pixels) != 3072*len(sp.labels[0]) {
				t.Fatalf("%d pixel bytes for %d labels", len(sp.pixels), len(sp.labels[0]))
			}
			total += len(sp.labels[0])
		}
		// One count per file, adding up to the records read; a note for each short file.
		sum := 0
		for _, n := range s.counts {
			sum += n
		}
		if len(s.counts) != len(fm.train)+len(fm.test) || sum != total || len(s.notes()) > len(s.counts) {
			t.Fatalf("counts %v for %d records, notes %q", s.counts, total, s.notes())
		}
	})
}
