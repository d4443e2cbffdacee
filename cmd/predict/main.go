// Command predict classifies inputs with the model of a checkpoint and prints, for each,
// the predicted class and the class probabilities.
//
//	go run ./cmd/predict -checkpoint m.ckpt digit.png more-digits/
//	go run ./cmd/predict -checkpoint m.ckpt -json t10k-images-idx3-ubyte.gz
//	go run ./cmd/predict -checkpoint m.ckpt -scale 255 pixels.csv
//
// Inputs, any number and mix:
//   - PNG or JPEG images, or directories of them (*.png, *.jpg, *.jpeg, sorted by name, not
//     recursive): they must have the model's height and width (they are rejected, not
//     resized); a 1-channel model reads them as grayscale, a 3-channel model as RGB; each
//     8-bit value v becomes v/255, as the training data (MNIST, CIFAR) were scaled. MNIST
//     digits are white on black: invert scans of dark ink on white paper first. A model
//     trained on -dataset images:DIR -image-size WxH gets every image resized to W×H by
//     area averaging, as training resized its images (datasets.ImageCHW); trained without
//     -image-size, it refuses another size as training did.
//   - CSV files (*.csv): one example per row, prod(input shape) numbers in CHW order,
//     divided by -scale (use 255 for raw pixel values); a first row that is not numeric is
//     taken as a header. A model trained on -dataset csv:PATH reads CSV as training did,
//     by the settings in its checkpoint: the run's declared -scale ranges (each feature x
//     in LO:HI becomes (x−LO)/(HI−LO), clipped to [0, 1]; a -scale flag is then refused),
//     its -header rule and its -label column, which a file may have (the training file
//     itself) or leave out (new data).
//   - IDX image files (the MNIST format, magic 0x00000803, raw or .gz), e.g.
//     t10k-images-idx3-ubyte.gz: every image, scaled by 1/255.
//
// A file named otherwise is read by its content: PNG, JPEG or IDX; anything else is
// refused with a line that says what it looks like (text, another image format, …).
//
// Output on stdout: CSV with a header (input,class,label,p0,p1,…), or with -json one
// JSON object per line: {"input": …, "class": …, "label": …, "probabilities": […],
// "logits": […]}. class is the predicted class's number, label its name: the training
// data's class names, which the checkpoint records (MNIST's digits, Fashion-MNIST's
// garments, the CIFAR classes, an image folder's class folders, a CSV file's label
// values), or the class number for a checkpoint that records none. An input is named by
// its path, or path:N for example N (from 0) of a CSV or IDX file.
//
// Exit status: 0 success; 1 a damaged checkpoint or a failed computation; 2 bad command
// line or an input that does not fit the model (one line on stderr names it).
package main

import (
	"os"

	"github.com/privtrain/privtrain/cmd/internal/predictcmd"
)

func main() { os.Exit(predictcmd.Main(os.Args[1:])) }
