package training

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// DatasetFingerprint computes the fingerprint of ds under name, as a checkpoint records
// it: the labels' hash and the content fingerprint (datasets.ContentFingerprint, which
// reads every example once).
func DatasetFingerprint(name string, ds datasets.Dataset) checkpoint.Fingerprint {
	f := labelFingerprint(name, ds)
	f.Content = datasets.ContentFingerprint(ds)
	return f
}

// labelFingerprint is DatasetFingerprint without the content fingerprint, which the
// trainer computes when it first needs it (or takes from TrainerConfig).
func labelFingerprint(name string, ds datasets.Dataset) checkpoint.Fingerprint {
	h := sha256.New()
	var b [4]byte
	for _, l := range datasets.Labels(ds) {
		binary.LittleEndian.PutUint32(b[:], uint32(l))
		h.Write(b[:])
	}
	return checkpoint.Fingerprint{
		Name:    name,
		Size:    ds.Len(),
		Shape:   ds.Shape(),
		Classes: ds.NumClasses(),
		Labels:  hex.EncodeToString(h.Sum(nil)),
	}
}

// fingerprint is the trainer's data fingerprint with its content fingerprint, computed
// on the first call from the training set as given (before any front-end features
// replace it) unless TrainerConfig.Data.ContentFingerprint gave it.
func (t *Trainer) fingerprint() checkpoint.Fingerprint {
	if t.dataset.Content == "" {
		t.dataset.Content = datasets.ContentFingerprint(t.rawTrain)
	}
	f := t.dataset
	f.Shape = slices.Clone(f.Shape)
	return f
}

// checkContentFingerprint refuses a TrainerConfig.Data.ContentFingerprint that is not a
// hex SHA-256 as datasets.ContentFingerprint writes it.
func checkContentFingerprint(s string) error {
	if s == "" {
		return nil
	}
	ok := len(s) == 64
	for _, r := range s {
		ok = ok && (r >= '0' && r <= '9' || r >= 'a' && r <= 'f')
	}
	if !ok {
		return fmt.Errorf("%w: ContentFingerprint %q is not a hex SHA-256 (datasets.ContentFingerprint)", ErrConfig, s)
	}
	return nil
}
