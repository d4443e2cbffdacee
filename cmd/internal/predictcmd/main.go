// Package predictcmd is the predict command, shared by cmd/predict and cmd/privtrain (predict subcommand).
package predictcmd

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/internal/safeio"
	_ "github.com/privtrain/privtrain/models" // old checkpoints without an architecture
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

const usageHeader = `usage: predict -checkpoint FILE [-json] [-scale S] INPUT...

Prints the predicted class and the class probabilities of each input with the model of
a checkpoint. INPUT: PNG/JPEG images or directories of them (the model's height and
width; grayscale for 1-channel models, RGB for 3-channel ones; pixel v becomes v/255;
a directory without images directly in it is read as class folders, DIR/<class>/*.png,
as train -dataset images:DIR reads them: each image's folder is its true class, printed
beside the prediction as true_label, and the accuracy goes to stderr),
CSV files (a row per example, CHW order, divided by -scale; a non-numeric first row is a
header) or IDX image files (MNIST format, raw or .gz; pixel v becomes v/255).
A model trained on -dataset csv:PATH reads CSV files with the run's -scale ranges,
-header and -label column (with or without that column; -scale is refused); one trained
on images:DIR -image-size WxH resizes images as training did.
Output: CSV (input,class,label,p0,p1,...) or, with -json, one JSON object per line.
class is the predicted class's number, label its name: the training data's class names
that the checkpoint records (the digits of MNIST, the garments of Fashion-MNIST, the
CIFAR classes, the folder names of images:DIR, the label values of csv:PATH), or the
class number for a checkpoint that records none.

Flags:
`

// Main runs the predict command with args (without the program name) and returns its exit status.
func Main(args []string) int { return run(args, os.Stdout, os.Stderr) }

// example is one named input.
type example struct {
	name string
	x    []float32
	// truth is the name of the class folder the example was read from (predict DIR of
	// DIR/<class>/*.png), "" for any other input.
	truth string
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	ckpt := fs.String("checkpoint", "", "checkpoint `FILE` written by train -checkpoint (required)")
	jsonOut := fs.Bool("json", false, "one JSON object per input and line: input, class, label, probabilities, logits")
	params := cli.AddParamsFlag(fs)
	signing := cli.SigningFlag(fs, "predict", stderr)
	scale := fs.Float64("scale", 1, "divide CSV values by `S` (255 for raw 0-255 pixels); images and IDX files are always scaled by 1/255; not for a model trained on csv:PATH, whose declared ranges apply")
	return cli.Run("predict", usageHeader, fs, args, stdout, stderr, func() error {
		if !(*scale > 0) || math.IsInf(*scale, 0) {
			return exit.Usagef("-scale %v: want a positive number", *scale)
		}
		if fs.NArg() == 0 {
			return exit.Usagef("no input: name PNG/JPEG files, directories, CSV or IDX files (see predict -help)")
		}
		c, p, err := cli.PredictorParams(*ckpt, *params, signing)
		if err != nil {
			return err
		}
		r := &reader{shape: p.InputShape(), scale: float32(*scale)}
		scaleGiven := false
		fs.Visit(func(f *flag.Flag) { scaleGiven = scaleGiven || f.Name == "scale" })
		if err := r.fromSettings(c, *ckpt, scaleGiven); err != nil {
			return err
		}
		var examples []example
		for _, arg := range fs.Args() {
			ex, err := r.read(arg)
			if err != nil {
				return err
			}
			examples = append(examples, ex...)
		}
		names, _ := cli.ClassNames(c, p.NumClasses())
		return predict(p, names, examples, *jsonOut, stdout, stderr)
	})
}

// predict runs the model on the examples and writes one line per example; names are the
// classes' names. Examples read from class folders (example.truth) get their folder's
// name beside the prediction (CSV column true_label, JSON field true_label), and stderr
// gets the accuracy on those whose folder names a class of the model.
func predict(p *nn.Predictor, names []string, examples []example, jsonOut bool, stdout, stderr io.Writer) error {
	L, K := p.ExampleLen(), p.NumClasses()
	x := make([]float32, 0, len(examples)*L)
	for _, e := range examples {
		x = append(x, e.x...)
	}
	logits := make([]float64, len(examples)*K)
	if err := p.Logits(x, logits); err != nil {
		return err
	}
	truths := slices.ContainsFunc(examples, func(e example) bool { return e.truth != "" })
	var acc accuracy
	w := bufio.NewWriter(stdout)
	var cw *csv.Writer
	if !jsonOut {
		cw = csv.NewWriter(w)
		head := []string{"input", "class", "label"}
		if truths {
			head = append(head, "true_label")
		}
		for k := range K {
			head = append(head, fmt.Sprintf("p%d", k))
		}
		_ = cw.Write(head)
	}
	probs := make([]float64, K)
	for i, e := range examples {
		z := logits[i*K : (i+1)*K]
		nn.Softmax(probs, z)
		class := nn.Argmax(z)
		acc.add(e.truth, names[class], names)
		if jsonOut {
			b, err := json.Marshal(struct {
				Input         string    `json:"input"`
				Class         int       `json:"class"`
				Label         string    `json:"label"`
				TrueLabel     string    `json:"true_label,omitempty"`
				Probabilities []float64 `json:"probabilities"`
				Logits        []float64 `json:"logits"`
			}{e.name, class, names[class], e.truth, probs, z})
			if err != nil {
				return err
			}
			w.Write(b)
			w.WriteByte('\n')
			continue
		}
		rec := []string{e.name, strconv.Itoa(class), names[class]}
		if truths {
			rec = append(rec, e.truth)
		}
		for _, v := range probs {
			rec = append(rec, strconv.FormatFloat(v, 'g', 6, 64))
		}
		_ = cw.Write(rec)
	}
	if cw != nil {
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if truths {
		acc.report(stderr, names)
	}
	return nil
}

// nameList lists names, the first dozen of a longer list.
func nameList(names []string) string {
	const show = 12
	if len(names) > show {
		return fmt.Sprintf("%s, … (%d in all)", strings.Join(names[:show], ", "), len(names))
	}
	return strings.Join(names, ", ")
}

// accuracy counts the predictions of examples read from class folders.
type accuracy struct {
	counted, correct int
	// unknown are the folder names that name no class of the model, in order of appearance.
	unknown []string
}

// add counts one prediction, named predicted, of an example of true class truth ("":
// not from a class folder; a name not among names: not counted).
func (a *accuracy) add(truth, predicted string, names []string) {
	switch {
	case truth == "":
	case slices.Contains(names, truth):
		a.counted++
		if truth == predicted {
			a.correct++
		}
	case !slices.Contains(a.unknown, truth):
		a.unknown = append(a.unknown, truth)
	}
}

// report writes the accuracy line (as evaluate's, on the images whose folder names a
// class) and a warning naming the folders that name none.
func (a *accuracy) report(w io.Writer, names []string) {
	if len(a.unknown) > 0 {
		fmt.Fprintf(w, "predict: warning: class folders %s name no class of the model (%s); their images are not counted in the accuracy\n", strings.Join(a.unknown, ", "), nameList(names))
	}
	if a.counted > 0 {
		fmt.Fprintf(w, "predict: accuracy %.2f%% (%s of %s images correct; the true class is each image's folder)\n", 100*float64(a.correct)/float64(a.counted), cli.Thousands(a.correct), cli.Thousands(a.counted))
	}
}

// reader turns inputs into examples of the model's input shape.
type reader struct {
	shape []int
	scale float32
	// table, when set, reads CSV rows as the training data of a model trained on
	// -dataset csv:PATH were read: the run's label column and declared ranges.
	table *tableFormat
	// folder is set for a model trained on -dataset images:DIR: images are converted as
	// the training images were (datasets.ImageCHW); resize says whether training
	// resized them (-image-size), else an image of another size is refused.
	folder, resize bool
	// trainedOn is the run's -dataset, for messages.
	trainedOn string
}

// tableFormat is how cmd/train read the CSV file of a run on -dataset csv:PATH: its
// options (label column, header rule, declared ranges, categorical columns, missing
// values) and the number of raw feature columns, label not counted.
type tableFormat struct {
	opts datasets.CSVOptions
	raw  int
}

// fromSettings sets up the reader for a model trained on your own data, by the settings
// cmd/train records in the checkpoint (see cli.DataFlags.Settings).
func (r *reader) fromSettings(c *checkpoint.Training, ckpt string, scaleGiven bool) error {
	dataset := c.Settings["dataset"]
	kind, _ := cli.OwnDataKind(dataset)
	r.trainedOn = dataset
	switch kind {
	case "csv":
		scale := c.Settings["scale"]
		ranges, err := datasets.ParseRanges(scale)
		if err != nil {
			return fmt.Errorf("-checkpoint %s: setting scale=%q: %s", ckpt, scale, strings.TrimPrefix(err.Error(), "datasets: "))
		}
		if scaleGiven {
			return exit.Usagef("-scale: the model of %s was trained on %s with -scale %s (declared ranges), which predict applies to CSV input itself; leave -scale out", ckpt, dataset, scale)
		}
		var flags cli.DataFlags
		if err := flags.FromSettings(c.Settings, nil); err != nil {
			return fmt.Errorf("-checkpoint %s: %v", ckpt, err)
		}
		opts, err := flags.CSVOptions()
		if err != nil {
			return fmt.Errorf("-checkpoint %s: setting %s", ckpt, strings.TrimPrefix(err.Error(), "-"))
		}
		raw := r.size() - opts.EncodedFeatures(0)
		if n := raw - len(opts.Categorical); n < 0 || len(ranges) != 1 && len(ranges) != n {
			return fmt.Errorf("-checkpoint %s: setting scale=%q has %d ranges for %d numeric features", ckpt, scale, len(ranges), n)
		}
		r.table = &tableFormat{opts: opts, raw: raw}
	case "images":
		r.folder, r.resize = true, c.Settings["image-size"] != ""
	}
	return nil
}

func (r *reader) size() int {
	n := 1
	for _, v := range r.shape {
		n *= v
	}
	return n
}

func (r *reader) read(path string) ([]example, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, exit.Usagef("%s: no such file or directory", path)
		}
		return nil, err
	}
	if st.IsDir() {
		return r.readDir(path)
	}
	lower := strings.ToLower(path)
	switch {
	case strings.HasSuffix(lower, ".csv"):
		return r.readCSV(path)
	case strings.HasSuffix(lower, ".png") || strings.HasSuffix(lower, ".jpg") || strings.HasSuffix(lower, ".jpeg"):
		x, err := r.readImage(path)
		if err != nil {
			return nil, err
		}
		return []example{{name: path, x: x}}, nil
	}
	f, err := safeio.Open(path)
	if err != nil {
		return nil, usageIfNotRegular(err)
	}
	defer f.Close()
	// Any other name: by content. PNG and JPEG are read as images; IDX (raw or gzipped)
	// as MNIST images; anything else is refused, saying what it looks like.
	br := bufio.NewReader(f)
	head, _ := br.Peek(sniffLen)
	switch {
	case bytes.HasPrefix(head, pngMagic) || bytes.HasPrefix(head, jpegMagic):
		x, err := r.readImage(path)
		if err != nil {
			return nil, err
		}
		return []example{{name: path, x: x}}, nil
	case bytes.HasPrefix(head, gzipMagic) || bytes.HasPrefix(head, idxMagic):
		return r.decodeIDX(path, br)
	}
	return nil, exit.Usagef("%s: not an input predict reads: %s. predict reads PNG and JPEG images (any name), CSV files named .csv (one example per row), IDX image files (MNIST format, raw or .gz) and directories of images", path, describe(head))
}

// Magic numbers of the formats predict recognises by content.
var (
	pngMagic  = []byte("\x89PNG\r\n\x1a\n")
	jpegMagic = []byte{0xff, 0xd8, 0xff}
	gzipMagic = []byte{0x1f, 0x8b}
	idxMagic  = []byte{0, 0, 8, 3} // unsigned bytes, 3 dimensions
)

// sniffLen is how much of a file describe looks at.
const sniffLen = 64

// describe says in a few words what a file that starts with head looks like.
func describe(head []byte) string {
	switch {
	case len(head) == 0:
		return "the file is empty"
	case bytes.HasPrefix(head, []byte("GIF8")):
		return "it is a GIF image (convert it to PNG)"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "it is a WebP image (convert it to PNG)"
	case bytes.HasPrefix(head, []byte("BM")) && len(head) >= 14 && !utf8.Valid(head):
		return "it is a BMP image (convert it to PNG)"
	case bytes.HasPrefix(head, []byte{0, 0, 8}) && len(head) >= 4:
		plural := "s"
		if head[3] == 1 {
			plural = " (labels?)"
		}
		return fmt.Sprintf("it is an IDX file of bytes in %d dimension%s, not images (3 dimensions, magic 0x00000803)", head[3], plural)
	}
	text := head
	if len(head) == sniffLen { // may end inside a character
		for i := 0; i < utf8.UTFMax && len(text) > 0 && !utf8.Valid(text); i++ {
			text = text[:len(text)-1]
		}
	}
	if utf8.Valid(text) && !bytes.ContainsFunc(text, func(r rune) bool { return r != '\n' && r != '\r' && r != '\t' && unicode.IsControl(r) }) {
		line, _, _ := bytes.Cut(text, []byte("\n"))
		return fmt.Sprintf("it is text, starting %q (a table of numbers must be named .csv)", strings.TrimSpace(string(line)))
	}
	return fmt.Sprintf("binary data starting % x", head[:min(len(head), 8)])
}

// readDir reads the images of dir: those directly in it or, when it holds none, those
// of its class folders as -dataset images:DIR training reads them (DIR/<class>/*.png;
// each example then carries its folder's name as its true class). Other files (and
// names starting with ".") are skipped, as training skips them.
func (r *reader) readDir(dir string) ([]example, error) {
	out, err := r.readImages(dir, "")
	if err != nil || len(out) > 0 {
		return out, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		ex, err := r.readImages(filepath.Join(dir, e.Name()), e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, ex...)
	}
	if len(out) == 0 {
		return nil, exit.Usagef("%s: no .png, .jpg or .jpeg files in the directory or in its class folders (DIR/<class>/*.png)", dir)
	}
	return out, nil
}

// readImages reads the .png, .jpg and .jpeg files directly in dir, in name order, as
// examples of true class truth ("": unknown).
func (r *reader) readImages(dir, truth string) ([]example, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []example
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || (ext != ".png" && ext != ".jpg" && ext != ".jpeg") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		x, err := r.readImage(path)
		if err != nil {
			return nil, err
		}
		out = append(out, example{name: path, x: x, truth: truth})
	}
	return out, nil
}

// readImage decodes a PNG or JPEG image into CHW values in [0,1]. Its size is checked
// from its header before any pixel is decoded, as training's image folders check it.
func (r *reader) readImage(path string) ([]float32, error) {
	img, err := datasets.DecodeImageFile(path, 0, func(w, h int) error { return r.checkSize(w, h, path) })
	if errors.Is(err, datasets.ErrImage) || errors.Is(err, safeio.ErrNotRegular) {
		// In predict's words: one file, not a folder.
		msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "datasets: "), datasets.ErrImage.Error()+": ")
		return nil, exit.Usagef("%s", strings.Replace(msg, ": not a PNG or JPEG image: ", ": not a readable PNG or JPEG image: ", 1))
	}
	if err != nil {
		return nil, err
	}
	return r.imageValues(img, path)
}

// usageIfNotRegular makes safeio's refusal of a FIFO, a device or a folder a usage error.
func usageIfNotRegular(err error) error {
	if errors.Is(err, safeio.ErrNotRegular) {
		return exit.Usagef("%v", err)
	}
	return err
}

// checkSize refuses an image of w×h pixels that the model cannot take: any other size
// than its input, unless it was trained on an image folder with -image-size (then
// predict resizes as training did).
func (r *reader) checkSize(w, h int, name string) error {
	shape := r.shape
	if len(shape) != 3 || (shape[0] != 1 && shape[0] != 3) {
		return exit.Usagef("%s: the model's input is %s, not a 1- or 3-channel image; give a CSV file", name, cli.Shape(shape))
	}
	H, W := shape[1], shape[2]
	if !(r.folder && r.resize) && (w != W || h != H) {
		if r.folder {
			return exit.Usagef("%s is %d×%d pixels; the model expects %d×%d images (%s), and it was trained on %s without -image-size, so predict does not resize either: resize or crop it first", name, w, h, W, H, cli.Shape(shape), r.trainedOn)
		}
		return exit.Usagef("%s is %d×%d pixels; the model expects %d×%d images (%s): resize or crop it first (predict does not resize)", name, w, h, W, H, cli.Shape(shape))
	}
	return nil
}

// imageValues converts img to the CHW input of the model, as datasets.Images and the
// image folders of training convert images: grayscale for one channel, RGB for three,
// each 8-bit value v as v/255. An image of another size is refused, unless the model was
// trained on -dataset images:DIR with -image-size: then it is resized as training resized.
func (r *reader) imageValues(img image.Image, name string) ([]float32, error) {
	if err := r.checkSize(img.Bounds().Dx(), img.Bounds().Dy(), name); err != nil {
		return nil, err
	}
	C, H, W := r.shape[0], r.shape[1], r.shape[2]
	px := datasets.ImageCHW(img, C, W, H)
	x := make([]float32, len(px))
	for i, v := range px {
		x[i] = float32(v) / 255
	}
	return x, nil
}

func (r *reader) readCSV(path string) ([]example, error) {
	f, err := safeio.Open(path)
	if err != nil {
		return nil, usageIfNotRegular(err)
	}
	defer f.Close()
	return r.decodeCSV(path, f)
}

// decodeCSV reads one example per row: exactly size() finite numbers, divided by scale;
// for a model trained on csv: data, see decodeTable.
func (r *reader) decodeCSV(path string, in io.Reader) ([]example, error) {
	in = safeio.LineLimit(in, safeio.MaxLine) // encoding/csv would buffer an endless line whole
	if r.table != nil {
		return r.decodeTable(path, in)
	}
	cr := csv.NewReader(in)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	L := r.size()
	var out []example
	for row := 1; ; row++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, exit.Usagef("%s: %v", path, err)
		}
		if row == 1 && len(rec) > 0 {
			if _, err := strconv.ParseFloat(strings.TrimSpace(rec[0]), 64); err != nil {
				continue // a header
			}
		}
		if len(rec) != L {
			hint := ""
			if len(rec) == L+1 {
				hint = "; remove the label column"
			}
			return nil, exit.Usagef("%s row %d has %d values; the model expects %d (%s)%s", path, row, len(rec), L, cli.Shape(r.shape), hint)
		}
		x := make([]float32, L)
		for j, s := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, exit.Usagef("%s row %d column %d: %q is not a finite number", path, row, j+1, s)
			}
			x[j] = float32(v / float64(r.scale))
		}
		out = append(out, example{name: fmt.Sprintf("%s:%d", path, len(out)), x: x})
	}
	if len(out) == 0 {
		return nil, exit.Usagef("%s: no rows", path)
	}
	return out, nil
}

// decodeTable reads a CSV file for a model trained on -dataset csv:PATH as cmd/train
// read its data, with datasets.ReadCSV: the run's -header rule, its -label column (which
// the file may have or leave out: a row of size()+1 fields has it, one of size() fields
// has not) and each feature x scaled by its declared range [lo, hi] to (x−lo)/(hi−lo),
// clipped to [0, 1].
func (r *reader) decodeTable(path string, in io.Reader) ([]example, error) {
	b, err := io.ReadAll(in)
	if errors.Is(err, safeio.ErrLineTooLong) {
		return nil, exit.Usagef("%s: %v", path, err)
	}
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(bytes.NewReader(b))
	cr.FieldsPerRecord = -1
	first, err := cr.Read()
	if err == io.EOF {
		return nil, exit.Usagef("%s: no rows", path)
	}
	if err != nil {
		return nil, exit.Usagef("%s: %v", path, err)
	}
	L := r.table.raw
	opts := r.table.opts
	switch len(first) {
	case L + 1:
	case L:
		opts.Label, opts.Unlabelled = "", true
	default:
		return nil, exit.Usagef("%s row 1 has %d values; the model (trained on %s) expects %d feature columns, with or without the label column", path, len(first), r.trainedOn, L)
	}
	t, err := datasets.ReadCSV(bytes.NewReader(b), opts)
	if err != nil {
		var ce *datasets.CSVError
		switch {
		case errors.As(err, &ce) && ce.Column >= 0:
			return nil, exit.Usagef("%s line %d %s: %s", path, ce.Line, ce.Place(), ce.Msg)
		case errors.As(err, &ce):
			return nil, exit.Usagef("%s line %d: %s", path, ce.Line, ce.Msg)
		}
		return nil, exit.Usagef("%s: %s", path, strings.TrimPrefix(err.Error(), "datasets: "+datasets.ErrCSV.Error()+": "))
	}
	out := make([]example, t.Len())
	for i := range out {
		x := make([]float32, r.size())
		t.Example(i, x)
		out[i] = example{name: fmt.Sprintf("%s:%d", path, i), x: x}
	}
	return out, nil
}

// maxIDX bounds the pixel bytes of an IDX file (the MNIST training images are 47 MB):
// each byte becomes a float32 input, so 128 MiB of pixels cost about 640 MB.
const maxIDX = 128 << 20

// decodeIDX reads an IDX file of unsigned-byte images, raw or gzipped, as the MNIST
// reader does (mnist.DecodeImages); any other file is not an input predict knows.
func (r *reader) decodeIDX(path string, in io.Reader) ([]example, error) {
	n, h, w, px, err := mnist.DecodeImages(in, maxIDX)
	if errors.Is(err, mnist.ErrMagic) {
		return nil, exit.Usagef("%s: not an IDX image file (magic 0x00000803: unsigned-byte images; a labels file, idx1, is not an input); predict reads PNG and JPEG images, CSV files named .csv and IDX image files (raw or .gz)", path)
	}
	if err != nil {
		return nil, exit.Usagef("%s: %v", path, err)
	}
	if !slices.Equal(r.shape, []int{1, h, w}) {
		return nil, exit.Usagef("%s holds %d×%d grayscale images; the model expects %s", path, h, w, cli.Shape(r.shape))
	}
	out := make([]example, n)
	L := h * w
	for i := range out {
		x := make([]float32, L)
		for j, v := range px[i*L : (i+1)*L] {
			x[j] = float32(v) / 255
		}
		out[i] = example{name: fmt.Sprintf("%s:%d", path, i), x: x}
	}
	return out, nil
}
