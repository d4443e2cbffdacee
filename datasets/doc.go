// Package datasets defines Dataset, the contract between data and the trainer, and the
// small tools every reader shares: an in-memory dataset of 8-bit images, subsets, and a
// deterministic stratified split.
//
// The file formats live in subpackages, one per format:
//
//   - datasets/mnist reads the IDX files of MNIST and Fashion-MNIST (raw or gzipped),
//     embeds a 10,000-digit MNIST sample so that everything runs without a download, and
//     downloads the full MNIST from a list of mirrors with checked SHA-256 digests.
//   - datasets/cifar reads the binary versions of CIFAR-10 and CIFAR-100, from the
//     extracted directory or straight from the .tar.gz archive.
//
// Your own data, in this package:
//
//   - LoadCSV reads numeric features and a label column from a CSV file into a Table,
//     scaled to [0, 1] by ranges the user declares (never by the data's own statistics,
//     which differential privacy does not cover). With CSVOptions.Unlabelled it reads
//     new data without the label column the same way (cmd/predict).
//   - LoadImageFolder reads PNG and JPEG images from one subfolder per class, as
//     torchvision's ImageFolder does, into an *Images (pixels b/255).
//   - HoldOut splits a dataset into training and test sets, stratified by label, the
//     test examples chosen at random by a seed.
//
// Class names: a dataset that knows what its classes are called implements ClassNamer
// (the MNIST digits, Fashion-MNIST's garments and the CIFAR classes from the format
// readers, an image folder's class folders, a CSV file's label values); ClassNames
// collects them, and subsets and held-out splits pass them on, so that a checkpoint can
// record them and predictions can print them. A CSV file whose numeric labels are not
// the class numbers 0 to K−1 (negative, fractional, 1.0, or with classes missing) loads
// as documented at Table, with a Table.LabelWarning that names the values.
//
// Augment (augment.go) draws the random views of augmentation multiplicity: a random crop
// of the image padded by 4 mirrored (or zero) pixels and a horizontal flip, each view a
// pure function of a key, the training step, the example and the view number, so that a
// resumed seeded run redraws the same views without saved generator state.
//
// The format readers return an *Images, which satisfies Dataset. A typical use:
//
//	train, test, err := mnist.Embedded()       // 8,000 / 2,000 real digits, no files needed
//	if err != nil { … }
//	small, err := datasets.StratifiedSubset(train, 500) // quick end-to-end runs
//	x := make([]float32, datasets.Size(small))
//	label := small.Example(0, x)                // x holds 1×28×28 values in [0,1]
//
// Images keeps pixels as bytes and scales them by a table lookup in Example, so a
// dataset costs one byte per pixel in memory and Example is a copy loop.
//
// Datasets of derived features are Datasets too: scatter.Cache (and nn.Model's
// FrontEndFeatures, which training.Trainer calls for a model that starts with a fixed front end
// such as layers.Scattering2D) computes a fixed, data-independent transform of every
// example once and holds the result as float32 with the source's labels, so training reads
// features as it reads pixels. Such a transform costs no privacy; statistics computed from
// the data (a mean, a min and max for scaling) would, and are not offered here.
//
// This package has no dependency on Gorgonia; it is safe to import from anywhere.
package datasets
