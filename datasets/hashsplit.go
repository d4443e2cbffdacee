package datasets

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// Domains of HashSplit: the hash that places an example starts with the split's domain,
// so that two splits of one data set with the same seed (the train/test split of
// -test-fraction, then the validation split of -validation inside its training part)
// are independent of each other.
const (
	// DomainTest is the domain of the train/test split of your own data (csv:, images:).
	DomainTest = "privtrain/test-split v1"
	// DomainValidation is the domain of the validation split of a training set, the one
	// cmd/train -validation and -tune hold out.
	DomainValidation = "privtrain/tune-split v1"
)

// HashSplit splits the indices 0…ds.Len()−1 into rest and picked, placing each example by
// its own content: example i is picked when the first 8 bytes of
//
//	SHA-256(domain ‖ 0x00 ‖ le64(seed) ‖ float32 bits of its values ‖ le32(label)),
//
// read little-endian as u/2^64 ∈ [0, 1), fall below fraction. Both slices are in
// increasing index order.
//
// Whether an example is picked depends on that example, the domain and the seed only,
// never on the other examples or their order. So adding or removing one example moves no
// other: for neighbouring data sets D and D′ (one example added or removed), the rest
// parts differ by one example at most, and so do the picked parts. Differential privacy
// of what is trained on rest therefore holds with respect to the data set that was split,
// as it does with respect to rest. (A split that draws one permutation of the whole set,
// as RandomStratifiedSplit does, lacks this: removing one of the 8,000 embedded MNIST
// examples changes about 700 of the 800 that HoldOut holds out.)
//
// The price: the number picked is binomial, Bin(n, fraction) when the n examples are
// distinct, not exactly round(fraction·n); classes are not stratified (each class gives
// about fraction of its examples, binomially, and a small class may give none);
// identical examples (same values and label) always land on the same side. Exact
// per-class counts cannot be had with the property above: when one example more takes
// a class's quota round(fraction·m) up by one, some other example of the class must
// change sides (unless the new one is held out), and the training parts then differ by
// a swap, two examples.
func HashSplit(ds Dataset, fraction float64, seed uint64, domain string) (rest, picked []int, err error) {
	if !(fraction > 0 && fraction < 1) {
		return nil, nil, fmt.Errorf("datasets: hold-out fraction %v: want a value in (0, 1)", fraction)
	}
	x := make([]float32, Size(ds))
	buf := make([]byte, 0, len(domain)+1+8+4*len(x)+4)
	for i := range ds.Len() {
		label := ds.Example(i, x)
		buf = append(buf[:0], domain...)
		buf = append(buf, 0)
		buf = binary.LittleEndian.AppendUint64(buf, seed)
		for _, v := range x {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		buf = binary.LittleEndian.AppendUint32(buf, uint32(label))
		sum := sha256.Sum256(buf)
		if float64(binary.LittleEndian.Uint64(sum[:8]))/(1<<64) < fraction {
			picked = append(picked, i)
		} else {
			rest = append(rest, i)
		}
	}
	return rest, picked, nil
}

// HashHoldOut splits ds into a training and a test set by HashSplit: the test set gets
// the examples HashSplit picks for fraction, seed and domain, the training set the
// others, both in ds's order. Both must be non-empty. See HashSplit for why this split,
// and not HoldOut's, keeps differential privacy with respect to ds.
func HashHoldOut(ds Dataset, fraction float64, seed uint64, domain string) (train, test Dataset, err error) {
	rest, picked, err := HashSplit(ds, fraction, seed, domain)
	if err != nil {
		return nil, nil, err
	}
	if len(picked) == 0 || len(rest) == 0 {
		return nil, nil, fmt.Errorf("datasets: hold-out fraction %v of %d examples (split seed %d) holds out %d and leaves %d for training; both must be ≥ 1", fraction, ds.Len(), seed, len(picked), len(rest))
	}
	if train, err = Subset(ds, rest); err != nil {
		return nil, nil, err
	}
	if test, err = Subset(ds, picked); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}
