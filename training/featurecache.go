package training

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/nn"
)

// The feature cache keeps a front end's output for a dataset in a file named by a key
// over everything the output depends on, so that later runs on the same data with the
// same front end load it instead of computing it again (TrainerConfig.FeatureCache.Dir,
// CachedFrontEndFeatures). The key is SHA-256 over
//
//   - a versioned header ("privtrain front-end feature cache key v1"),
//   - the front-end layers as checkpoints encode them (type and settings, e.g.
//     {"type":"scattering2d","settings":{"j":2,"l":8}}), the raw per-example input shape,
//     the feature shape and the model's dtype,
//   - the number of examples and every example's raw values, as float32 bits.
//
// Labels are not in the key: the features do not depend on them, and a loaded dataset
// takes its labels from the dataset given. Keying on content, not on paths or names,
// means a changed data file or front end can never meet stale features: it has another
// key and so another file. The file (featurefile.go) repeats the key and ends in a SHA-256
// checksum, or an HMAC-SHA256 when the cache has a key (CachedFrontEndFeaturesWithKey);
// a corrupt, truncated, edited, mismatching or non-regular file is reported, recomputed
// and rewritten, never used. As a guard against a front end whose code changed (which the key
// cannot see), the first and last examples' features are computed afresh on every load
// and must equal the stored ones bit for bit.
//
// The cache holds features of the training data, from which much of the data can be
// recovered: protect the directory as the data itself. Files are written with mode 0600.

// featureCacheKeyVersion starts the key; raising it retires every existing cache file.
const featureCacheKeyVersion = "privtrain front-end feature cache key v1\n"

// FeatureCacheUse says what the feature cache did for one dataset.
type FeatureCacheUse struct {
	// Set names the dataset: "training" or "test" for the Trainer's.
	Set string
	// File is the cache file of the dataset's features; empty when the front end cannot
	// be cached (a layer type that is not registered, see layers.Register).
	File string
	// Loaded is true when the features were read from File, false when they were
	// computed (and written to File, unless Problem says that failed).
	Loaded bool
	// Problem, if not empty, says why an existing File was not used (corrupt, truncated,
	// written for other data) or why File could not be written; training goes on with
	// the computed features either way.
	Problem string
}

// CachedFrontEndFeatures is m.FrontEndFeatures with a feature cache in directory dir
// (created if needed): it loads ds's features from dir when a valid file for exactly
// this data and front end is there, and otherwise computes them and writes the file.
// Problems with the cache (a corrupt file, a directory that cannot be written) do not
// fail the call: use reports them, and the features are computed. For a model without
// a front end it returns ds and a zero use.
func CachedFrontEndFeatures(m *nn.Model, ds datasets.Dataset, dir string) (datasets.Dataset, FeatureCacheUse, error) {
	return cachedFrontEndFeatures(context.Background(), m, ds, dir, nil)
}

// CachedFrontEndFeaturesWithKey is CachedFrontEndFeatures with files that end in an
// HMAC-SHA256 under key instead of a SHA-256: a file edited by someone without the key,
// however they recompute its checksum, is refused, recomputed and rewritten (see
// TrainerConfig.FeatureCache.Key).
func CachedFrontEndFeaturesWithKey(m *nn.Model, ds datasets.Dataset, dir string, key []byte) (datasets.Dataset, FeatureCacheUse, error) {
	if key == nil {
		key = []byte{} // a key, if an empty one: still not the unkeyed SHA-256
	}
	return cachedFrontEndFeatures(context.Background(), m, ds, dir, key)
}

// cachedFrontEndFeatures is CachedFrontEndFeatures, stopping between chunks of examples
// when ctx is done (with an error wrapping ctx.Err()), with files keyed by macKey when it
// is not nil.
func cachedFrontEndFeatures(ctx context.Context, m *nn.Model, ds datasets.Dataset, dir string, macKey []byte) (datasets.Dataset, FeatureCacheUse, error) {
	var use FeatureCacheUse
	if !m.HasFrontEnd() {
		return ds, use, nil
	}
	if !slices.Equal(ds.Shape(), m.InputShape()) {
		return nil, use, fmt.Errorf("%w: examples of shape %v, model %s expects %v", ErrConfig, ds.Shape(), m.Name(), m.InputShape())
	}
	key, err := featureKey(ctx, m, ds)
	if err != nil {
		if ctx.Err() != nil {
			return nil, use, err
		}
		use.Problem = err.Error()
		feats, err := m.FrontEndFeaturesContext(ctx, ds)
		return feats, use, err
	}
	use.File = filepath.Join(dir, "frontend-"+hex.EncodeToString(key[:])+".features")
	values, err := readFeatureFile(use.File, key, ds.Len(), m.FeatureShape(), macKey)
	if err == nil {
		err = checkCachedFeatures(m, ds, values)
	}
	if err == nil {
		loaded, err := datasets.NewFeatures(ds, m.FeatureShape(), values)
		if err != nil {
			return nil, use, err
		}
		use.Loaded = true
		return nn.AsFeatures(loaded), use, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		use.Problem = fmt.Sprintf("%s: %v; recomputed and rewritten", use.File, err)
	}
	feats, err := m.FrontEndFeaturesContext(ctx, ds)
	if err != nil {
		return nil, use, err
	}
	f, _ := nn.FeaturesOf(feats) // m has a front end: FrontEndFeatures made feats
	if err := writeFeatures(dir, use.File, key, macKey, f); err != nil {
		if use.Problem != "" {
			use.Problem += "; "
		}
		use.Problem += fmt.Sprintf("writing %s: %v", use.File, err)
	}
	return feats, use, nil
}

// featureKey is the cache key of ds's features under m's front end (see the top of the
// file). It fails for a front-end layer whose type is not registered: without its
// settings two different layers could share a key.
func featureKey(ctx context.Context, m *nn.Model, ds datasets.Dataset) ([32]byte, error) {
	var key [32]byte
	desc := struct {
		Layers   []nn.LayerConfig `json:"front_end"`
		Input    []int            `json:"input_shape"`
		Output   []int            `json:"feature_shape"`
		DType    string           `json:"dtype"`
		Examples int              `json:"examples"`
		// Layout marks features of absorbed layers, in the native engine's layout.
		Layout string `json:"layout,omitempty"`
	}{Input: m.InputShape(), Output: m.FeatureShape(), DType: m.DType().String(), Examples: ds.Len(), Layout: m.FrontEndLayout()}
	// The layers as checkpoints encode them (a registered layer's LayerConfig has Type
	// and Settings only, so the key's bytes are those of its checkpoint entry).
	arch, err := nn.ArchitectureOf(nn.Spec{Layers: m.FrontEndLayers()})
	if err != nil {
		return key, fmt.Errorf("%v; its features are not cached", err)
	}
	for _, lc := range arch.Layers {
		if lc.Type == "" {
			return key, fmt.Errorf("front-end layer %s is not registered (layers.Register), so its features are not cached", lc.GoType)
		}
	}
	desc.Layers = arch.Layers
	h := sha256.New()
	io.WriteString(h, featureCacheKeyVersion)
	if err := json.NewEncoder(h).Encode(desc); err != nil {
		return key, err
	}
	size := num.Prod(m.InputShape())
	const chunk = 512
	x := make([]float32, size)
	buf := make([]byte, 0, chunk*4*size)
	for i := range ds.Len() {
		if i%chunk == 0 {
			if err := ctx.Err(); err != nil {
				return key, fmt.Errorf("training: feature cache key stopped after %d of %d examples: %w", i, ds.Len(), err)
			}
		}
		ds.Example(i, x)
		buf = appendFloat32s(buf, x)
		if len(buf) == cap(buf) || i == ds.Len()-1 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Sum(key[:0])
	return key, nil
}

// checkCachedFeatures computes the features of ds's first and last examples afresh and
// compares them bit for bit with values: a front end whose computation changed since the
// file was written has the same key, and this catches it.
func checkCachedFeatures(m *nn.Model, ds datasets.Dataset, values []float32) error {
	n := ds.Len()
	if n == 0 {
		return nil
	}
	in, out := num.Prod(m.InputShape()), num.Prod(m.FeatureShape())
	for _, i := range []int{0, n - 1} {
		x := make([]float32, in)
		ds.Example(i, x)
		got, err := m.ApplyFrontEnd(x)
		if err != nil {
			return fmt.Errorf("training: front end %s on example %d: %w", m.FrontEnd(), i, err)
		}
		for j, v := range got {
			if math.Float32bits(v) != math.Float32bits(values[i*out+j]) {
				return fmt.Errorf("%w: example %d's feature %d is %v in the file but %v computed now (the front end's computation changed?)", errFeatureFile, i, j, values[i*out+j], v)
			}
		}
	}
	return nil
}

// writeFeatures writes fs to the cache file path in dir, creating dir (mode 0700), with
// its checksum keyed by macKey if not nil.
func writeFeatures(dir, path string, key [32]byte, macKey []byte, f *datasets.Features) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	shape := f.Shape()
	size := num.Prod(shape)
	const chunk = 512
	buf := make([]float32, chunk*size)
	next := 0
	return writeFeatureFile(path, featureHeader{key: key, count: f.Len(), shape: shape}, macKey, func() []float32 {
		k := min(chunk, f.Len()-next)
		for i := range k {
			f.Example(next+i, buf[i*size:(i+1)*size])
		}
		next += k
		return buf[:k*size]
	})
}
