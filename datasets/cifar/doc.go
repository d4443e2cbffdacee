// Package cifar reads the binary versions of CIFAR-10 and CIFAR-100, from the extracted
// directory or straight from the .tar.gz archive as distributed.
//
//	train, test, err := cifar.Load10("data/cifar-10-batches-bin")  // or the parent dir, or the .tar.gz
//	train, test, err := cifar.Load100("data/cifar-100-binary.tar.gz")                 // fine labels (100)
//	train, test, err := cifar.Load100("data/cifar-100-binary", cifar.CoarseLabels())  // 20 superclasses
//
// Both return *datasets.Images of 50,000 training and 10,000 test images of shape
// [3 32 32] (channels first, as stored: 1,024 red, then green, then blue values, each
// plane row-major), scaled to [0,1].
//
// # Files
//
// The archives are at https://www.cs.toronto.edu/~kriz/cifar.html (Alex Krizhevsky,
// "Learning Multiple Layers of Features from Tiny Images", 2009; cite that report when
// using the data).
//
//   - cifar-10-binary.tar.gz unpacks to cifar-10-batches-bin/ with data_batch_1.bin …
//     data_batch_5.bin (training) and test_batch.bin; each file is a sequence of
//     3,073-byte records: the label (0–9), then 3,072 pixel bytes.
//   - cifar-100-binary.tar.gz unpacks to cifar-100-binary/ with train.bin and test.bin;
//     each record is 3,074 bytes: the coarse label (0–19), the fine label (0–99), then
//     3,072 pixel bytes.
//
// Load10 and Load100 accept the directory holding the .bin files, its parent (holding
// cifar-10-batches-bin/ or cifar-10-binary.tar.gz, and likewise for CIFAR-100), or the
// archive itself. They check that every file is a whole, non-zero number of records,
// that labels are in range and that
// each CIFAR-100 fine class lies in one coarse class; faults match ErrRecordSize,
// ErrTruncated, ErrLabelRange and ErrLabelConflict under errors.Is, and missing files
// match fs.ErrNotExist, with messages naming the file.
//
// A file with fewer whole records than the official one (10,000 for a CIFAR-10 batch,
// 50,000 for CIFAR-100's train.bin), such as a sample of the data set, is read as it is;
// with WithNotes the loaders say which ("data_batch_1.bin: 1,017 of 10,000 records (a
// partial file)"), and cmd/train prints these notes:
//
//	var notes []string
//	train, test, err := cifar.Load10("../shared/data/cifar10-sample", cifar.WithNotes(&notes))
package cifar
