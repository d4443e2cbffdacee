package datasets

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/internal/csvrows"
	"github.com/privtrain/privtrain/internal/safeio"
)

// ErrCSV reports a CSV file that cannot be read as a dataset: a row of the wrong width, a
// feature that is not a number, a missing label column. The message names the line and
// the column.
var ErrCSV = errors.New("bad CSV data")

// CSVError is an ErrCSV at a place in the file: its line and, for a bad cell, its column
// (Column from 0, the label column counted; −1: the whole row; Name the header's name of
// the column, "" without a header). errors.As finds it, so that a caller can name the
// place in its own words; errors.Is(err, ErrCSV) holds. Its message counts columns from
// 1, as spreadsheets and editors do: "line 7: column 3 "age": …".
type CSVError struct {
	Line, Column int
	Name         string
	Msg          string // what is wrong, without the place
	// NotNumber: the cell is in a column read as numbers and is no number (perhaps a
	// category to declare, or the label column). MissingCell: the cell is missing and
	// its column has no declared value.
	NotNumber, MissingCell bool
}

func (e *CSVError) Error() string {
	if e.Column >= 0 {
		return fmt.Sprintf("%v: line %d: %s: %s", ErrCSV, e.Line, e.Place(), e.Msg)
	}
	return fmt.Sprintf("%v: line %d: %s", ErrCSV, e.Line, e.Msg)
}

// Place names the column of e, counted from 1, with its header name when it has one:
// `column 3 "age"`.
func (e *CSVError) Place() string {
	if e.Name != "" {
		return fmt.Sprintf("column %d %q", e.Column+1, e.Name)
	}
	return fmt.Sprintf("column %d", e.Column+1)
}

func (e *CSVError) Unwrap() error { return ErrCSV }

// Range is a closed interval [Min, Max] of feature values declared by the user. Features
// are scaled to [0, 1] as (x − Min)/(Max − Min), values outside the range clipped to it.
type Range struct{ Min, Max float64 }

// ParseRanges reads "LO:HI" (one range for every feature) or "LO:HI,LO:HI,…" (one per
// feature, in column order without the label column).
func ParseRanges(s string) ([]Range, error) {
	var rs []Range
	for _, part := range strings.Split(s, ",") {
		lo, hi, ok := strings.Cut(strings.TrimSpace(part), ":")
		a, errA := strconv.ParseFloat(strings.TrimSpace(lo), 64)
		b, errB := strconv.ParseFloat(strings.TrimSpace(hi), 64)
		if !ok || errA != nil || errB != nil {
			return nil, fmt.Errorf("datasets: range %q: want LO:HI, e.g. 0:255", part)
		}
		r := Range{a, b}
		if err := r.check(); err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func (r Range) check() error {
	if math.IsNaN(r.Min) || math.IsNaN(r.Max) || math.IsInf(r.Min, 0) || math.IsInf(r.Max, 0) || !(r.Min < r.Max) {
		return fmt.Errorf("datasets: range %g:%g: want finite LO < HI", r.Min, r.Max)
	}
	return nil
}

// Header says whether the first row of a CSV file names the columns.
type Header int

const (
	// HeaderAuto treats the first row as a header when one of its feature cells is not a
	// number (a label column of names does not count: labels may be names).
	HeaderAuto Header = iota
	HeaderYes
	HeaderNo
)

// ParseHeader reads a Header written as auto, yes or no.
func ParseHeader(s string) (Header, error) {
	switch s {
	case "auto":
		return HeaderAuto, nil
	case "yes":
		return HeaderYes, nil
	case "no":
		return HeaderNo, nil
	}
	return 0, fmt.Errorf("datasets: header %q: want auto, yes or no", s)
}

// CSVOptions say how to read a CSV file; the zero value is not enough: Ranges must
// declare the features' range.
type CSVOptions struct {
	// Label is the label column: a column name (needs a header) or a 0-based column index
	// written in decimal. Empty: the last column.
	Label string
	// Header says whether the first row is a header (default HeaderAuto).
	Header Header
	// Ranges declares the range of the features: one Range for all, or one per feature.
	// It is required: scaling by the data's own minimum and maximum would make every
	// example's scaled value depend on the extreme examples of the data set, a
	// data-dependent transform that differential privacy does not cover. A declared range
	// is public knowledge (a sensor's limits, 0:255 for bytes, 0:1 for proportions).
	Ranges []Range
	// Comma is the field separator (default ',').
	Comma rune
	// Unlabelled: the file has no label column, every column is a feature (Label must be
	// empty). The Table then has no classes: NumClasses is 0 and every example's label
	// 0. For new data to predict, read as the training file was.
	Unlabelled bool
	// Categorical declares the columns (by header name) whose cells are categories, each
	// with its list of categories: such a column becomes one 0/1 feature per declared
	// category, in the declared order (one-hot), and a cell that is none of them is an
	// error. The list is declared, not read from the data: which values occur in the data
	// would leak. Ranges then count the numeric columns only.
	Categorical []Categorical
	// Missing declares, per column (by header name), the value a missing cell takes: a
	// cell that is empty or one of MissingCells. A missing cell of a column not declared
	// here is an error naming it. The value is read as the column's cells are (a number
	// in the column's units, or one of its declared categories).
	Missing []Missing
	// MissingIndicator adds after the features of each column of Missing a 0/1 feature
	// that is 1 where the cell was missing.
	MissingIndicator bool
}

// Categorical is a categorical column of a CSV file and its declared categories.
type Categorical struct {
	Column     string
	Categories []string
}

// Missing is the value that replaces a missing cell of a column of a CSV file.
type Missing struct{ Column, Value string }

// MissingCells are the cells (besides an empty one, and compared without regard to case)
// that mean "no value" in a CSV file.
var MissingCells = []string{"?", "NA", "N/A", "NaN", "null", "None"}

func isMissing(cell string) bool {
	return cell == "" || slices.ContainsFunc(MissingCells, func(m string) bool { return strings.EqualFold(cell, m) })
}

// ParseCategorical reads "NAME=A,B,…;NAME=…": each categorical column's header name and
// its categories (at least two, distinct, not a missing-value cell).
func ParseCategorical(s string) ([]Categorical, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Categorical
	for _, part := range strings.Split(s, ";") {
		name, list, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("datasets: categorical column %q: want NAME=A,B,… (columns separated by ;)", part)
		}
		c := Categorical{Column: name}
		for _, v := range strings.Split(list, ",") {
			v = strings.TrimSpace(v)
			switch {
			case isMissing(v):
				return nil, fmt.Errorf("datasets: categorical column %q: category %q means a missing value; declare a fill value for missing cells instead", name, v)
			case slices.Contains(c.Categories, v):
				return nil, fmt.Errorf("datasets: categorical column %q: category %q twice", name, v)
			}
			c.Categories = append(c.Categories, v)
		}
		if len(c.Categories) < 2 {
			return nil, fmt.Errorf("datasets: categorical column %q: %d category; want at least 2", name, len(c.Categories))
		}
		if slices.ContainsFunc(out, func(o Categorical) bool { return o.Column == name }) {
			return nil, fmt.Errorf("datasets: categorical column %q declared twice", name)
		}
		out = append(out, c)
	}
	return out, nil
}

// ParseMissing reads "NAME=VALUE;NAME=VALUE…": the value each named column's missing
// cells take.
func ParseMissing(s string) ([]Missing, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Missing
	for _, part := range strings.Split(s, ";") {
		name, value, ok := strings.Cut(part, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || isMissing(value) {
			return nil, fmt.Errorf("datasets: missing value %q: want NAME=VALUE with a value that is not itself missing (columns separated by ;)", part)
		}
		if slices.ContainsFunc(out, func(o Missing) bool { return o.Column == name }) {
			return nil, fmt.Errorf("datasets: missing value of column %q declared twice", name)
		}
		out = append(out, Missing{name, value})
	}
	return out, nil
}

// EncodedFeatures is the number of features of a row of raw raw feature cells (the label
// cell not counted) under the categorical and missing-value declarations of o: each
// categorical column gives one per category, each column of Missing one more with
// MissingIndicator.
func (o CSVOptions) EncodedFeatures(raw int) int {
	n := raw
	for _, c := range o.Categorical {
		n += len(c.Categories) - 1
	}
	if o.MissingIndicator {
		n += len(o.Missing)
	}
	return n
}

// Table is an in-memory Dataset of numeric features read from a CSV file, of shape
// [features]. Values are scaled to [0, 1] by the declared ranges.
//
// Labels: when every label cell is a non-negative decimal integer, the labels are those
// integers and NumClasses is the largest plus one (classes without an example are
// allowed). Otherwise every label is a name, and the names, sorted in byte order
// (sort.Strings), are classes 0, 1, …: "cat", "dog", "emu" are 0, 1, 2. ClassNames holds
// the names in both cases ("0", "1", … for integer labels). The set of classes comes from
// the data, like the number of features: treat it as public.
type Table struct {
	features     int
	values       []float32 // Len()×features, row after row
	labels       []int32
	ClassNames   []string
	FeatureNames []string // the header's names of the feature columns; nil without a header
	// Columns are the header's names of every column, the label's included, in the
	// file's order; nil without a header (CSVLayout lays them out).
	Columns []string
	// Clipped counts the feature values that were outside their declared range and were
	// clipped to it. It is for the data owner's eyes: it depends on the data.
	Clipped int
	// LabelWarning, when not empty, says in one line why the labels may not be the
	// classes the user meant: numeric labels that are not the class numbers 0 to K−1
	// (negative, fractional or written otherwise, such as 1.0, and so read as class
	// names in text order; or integers leaving classes without examples). It names the
	// values and the line of the first; the labels are read as described above anyway.
	LabelWarning string
}

var _ Dataset = (*Table)(nil)
var _ Labeler = (*Table)(nil)

// Len returns the number of examples.
func (t *Table) Len() int { return len(t.labels) }

// Shape returns [features].
func (t *Table) Shape() []int { return []int{t.features} }

// NumClasses returns the number of classes.
func (t *Table) NumClasses() int { return len(t.ClassNames) }

// Label returns the label of example i.
func (t *Table) Label(i int) int { return int(t.labels[i]) }

// Example writes example i's scaled features into dst and returns its label; see Dataset.
func (t *Table) Example(i int, dst []float32) int {
	if len(dst) != t.features {
		panic(fmt.Sprintf("datasets: Example buffer has %d values, want %d", len(dst), t.features))
	}
	copy(dst, t.values[i*t.features:(i+1)*t.features])
	return int(t.labels[i])
}

// LoadCSV reads the CSV file at path; see ReadCSV.
func LoadCSV(path string, opts CSVOptions) (*Table, error) {
	f, err := safeio.Open(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	defer f.Close()
	t, err := readCSV(f, opts)
	if err != nil {
		return nil, fmt.Errorf("datasets: %s: %w", path, err)
	}
	return t, nil
}

// ReadCSV reads a dataset from CSV: one example per row, numeric feature columns and one
// label column (see CSVOptions and Table). Empty lines are skipped; every row must have
// the same number of fields; a feature that is not a finite number is an error naming
// its line and column (wrapping ErrCSV).
func ReadCSV(r io.Reader, opts CSVOptions) (*Table, error) {
	t, err := readCSV(r, opts)
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	return t, nil
}

func readCSV(r io.Reader, opts CSVOptions) (*Table, error) {
	var (
		t     *Table
		row   func(rec []string, line int) error
		cells labelCells // label cells, as written, and their lines
	)
	err := csvrows.Each(r, csvrows.Options{Comma: opts.Comma}, func(line int, rec []string) error {
		if row != nil {
			return row(rec, line)
		}
		first := slices.Clone(rec)
		var header bool
		var err error
		if t, row, header, err = startTable(first, opts, &cells); err != nil {
			return err
		}
		if !header {
			return row(first, 1)
		}
		return nil
	})
	if ce, ok := err.(*csvrows.Error); ok {
		return nil, fmt.Errorf("%w: %v", ErrCSV, ce.Err)
	}
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("%w: no rows", ErrCSV)
	}
	rows := len(cells.names)
	if opts.Unlabelled {
		rows = len(t.values) / max(t.features, 1)
	}
	if rows == 0 {
		return nil, fmt.Errorf("%w: a header but no data rows", ErrCSV)
	}
	if opts.Unlabelled {
		t.labels = make([]int32, rows)
		return t, nil
	}
	if err := t.setLabels(cells.names); err != nil {
		return nil, err
	}
	t.LabelWarning = cells.warning(t.ClassNames)
	return t, nil
}

// startTable reads the first row of a CSV file: it finds the label column and whether the
// row is a header, checks the declared ranges, and returns the empty table with the
// function that adds a row to it (appending the row's label cell and line to *cells).
func startTable(first []string, opts CSVOptions, cells *labelCells) (t *Table, row func(rec []string, line int) error, header bool, err error) {
	bad := func(line int, format string, a ...any) error {
		return &CSVError{Line: line, Column: -1, Msg: fmt.Sprintf(format, a...)}
	}
	width := len(first)
	label := width - 1
	if opts.Unlabelled {
		if opts.Label != "" {
			return nil, nil, false, fmt.Errorf("%w: label column %q given, but the file is read as unlabelled", ErrCSV, opts.Label)
		}
		label = -1
	} else if width < 2 {
		return nil, nil, false, bad(1, "%d column; want at least one feature and a label", width)
	}
	byName := false
	if opts.Label != "" {
		if k, err := strconv.Atoi(opts.Label); err == nil {
			if k < 0 || k >= width {
				return nil, nil, false, fmt.Errorf("%w: label column %d: the file has columns 0 to %d", ErrCSV, k, width-1)
			}
			label = k
		} else {
			byName = true
			label = slices.IndexFunc(first, func(s string) bool { return strings.TrimSpace(s) == opts.Label })
			if label < 0 {
				return nil, nil, false, fmt.Errorf("%w: no column named %q in the first row (%s)", ErrCSV, opts.Label, strings.Join(first, ","))
			}
		}
	}
	header = opts.Header == HeaderYes || byName
	if opts.Header == HeaderNo && byName {
		return nil, nil, false, fmt.Errorf("%w: label column %q given by name, but the file has no header", ErrCSV, opts.Label)
	}
	declared := len(opts.Categorical) + len(opts.Missing)
	if declared > 0 {
		if opts.Header == HeaderNo {
			return nil, nil, false, fmt.Errorf("%w: categorical columns and missing values are declared by column name, but the file has no header", ErrCSV)
		}
		header = true
	}
	if opts.Header == HeaderAuto && !header {
		for j, s := range first {
			if _, err := parseFeature(s); j != label && err != nil {
				header = true
				break
			}
		}
	}
	cols, numeric, err := csvColumns(first, label, header, opts)
	if err != nil {
		return nil, nil, false, err
	}
	switch len(opts.Ranges) {
	case 0:
		if numeric > 0 {
			return nil, nil, false, fmt.Errorf("%w: no feature range declared: give the range of the features (LO:HI, or one per feature); scaling by the data's own min and max is not private", ErrCSV)
		}
	case 1, numeric:
	default:
		what := "features"
		if len(opts.Categorical) > 0 {
			what = "numeric features (categorical columns take none)"
		}
		return nil, nil, false, fmt.Errorf("%w: %d feature ranges for %d %s: give one for all or one per feature", ErrCSV, len(opts.Ranges), numeric, what)
	}
	for _, rg := range opts.Ranges {
		if err := rg.check(); err != nil {
			return nil, nil, false, fmt.Errorf("%w: %v", ErrCSV, strings.TrimPrefix(err.Error(), "datasets: "))
		}
	}
	t = &Table{}
	for _, c := range cols {
		if c.label {
			continue
		}
		if c.cats != nil {
			for _, v := range c.cats {
				t.FeatureNames = append(t.FeatureNames, c.name+"="+v)
			}
		} else {
			t.FeatureNames = append(t.FeatureNames, c.name)
		}
		if c.indicator {
			t.FeatureNames = append(t.FeatureNames, c.name+" missing")
		}
	}
	t.features = len(t.FeatureNames)
	if !header {
		t.FeatureNames = nil
	} else {
		t.Columns = make([]string, len(cols))
		for j, c := range cols {
			t.Columns[j] = c.name
		}
	}
	row = func(rec []string, line int) error {
		if len(rec) != width {
			return bad(line, "%d fields, want %d as in the first row", len(rec), width)
		}
		for j, s := range rec {
			c := &cols[j]
			if c.label {
				cells.names = append(cells.names, strings.TrimSpace(s))
				cells.lines = append(cells.lines, line)
				continue
			}
			cell := strings.TrimSpace(s)
			missing := isMissing(cell)
			if missing {
				if c.fill == nil {
					return &CSVError{Line: line, Column: j, Name: c.name, Msg: fmt.Sprintf("missing value %q; declare the value a missing cell of this column takes", s), MissingCell: true}
				}
				cell = *c.fill
			}
			if err := c.encode(t, cell, opts.Ranges); err != nil {
				err.Line, err.Column, err.Name = line, j, c.name
				return err
			}
			if c.indicator {
				t.values = append(t.values, float32(b2f(missing)))
			}
		}
		return nil
	}
	return t, row, header, nil
}

// CSVColumn is how a feature column of a CSV file becomes features: a numeric one its
// value scaled by Range (clipped to [0, 1]), a categorical one a 0/1 feature per category
// (Categories, in order), each followed by a 0/1 missing indicator when Indicator. A
// missing cell (empty or one of MissingCells) takes Fill, or is an error when Fill is nil.
type CSVColumn struct {
	Name       string
	Categories []string
	Range      Range
	Fill       *string
	Indicator  bool
}

// CSVLayout lays out, in the file's order and without the label column, the feature
// columns of a file whose header is columns (every column's name) under opts: what
// ReadCSV does to each row's cells.
func CSVLayout(columns []string, opts CSVOptions) ([]CSVColumn, error) {
	label := len(columns) - 1
	if opts.Label != "" {
		if k, err := strconv.Atoi(opts.Label); err == nil && k >= 0 && k < len(columns) {
			label = k
		} else if label = slices.Index(columns, opts.Label); label < 0 {
			return nil, fmt.Errorf("%w: no column named %q in %q", ErrCSV, opts.Label, columns)
		}
	}
	cols, numeric, err := csvColumns(columns, label, true, opts)
	if err != nil {
		return nil, err
	}
	if n := len(opts.Ranges); n == 0 && numeric > 0 || n > 1 && n != numeric {
		return nil, fmt.Errorf("%w: %d feature ranges for %d numeric features", ErrCSV, n, numeric)
	}
	var out []CSVColumn
	for _, c := range cols {
		if c.label {
			continue
		}
		col := CSVColumn{Name: c.name, Categories: c.cats, Fill: c.fill, Indicator: c.indicator}
		if c.cats == nil {
			col.Range = opts.Ranges[0]
			if len(opts.Ranges) > 1 {
				col.Range = opts.Ranges[c.rangeAt]
			}
		}
		out = append(out, col)
	}
	return out, nil
}

// csvColumn is how a column of a CSV file becomes features.
type csvColumn struct {
	name      string // the header's, "" without one
	label     bool
	cats      []string // a categorical column's categories; nil for a numeric one
	rangeAt   int      // a numeric column's index among the numeric columns
	fill      *string  // the declared value of a missing cell; nil: none
	indicator bool
}

// csvColumns lays out the columns of a file whose first row is first: which is the
// label, which categorical, which numeric (and their count, numeric), and the missing
// values. Every declared column must be named in the header, and no declaration may be
// the label column's.
func csvColumns(first []string, label int, header bool, opts CSVOptions) (cols []csvColumn, numeric int, err error) {
	cols = make([]csvColumn, len(first))
	at := map[string]int{}
	for j, s := range first {
		cols[j].label = j == label
		if header {
			cols[j].name = strings.TrimSpace(s)
			if _, dup := at[cols[j].name]; !dup {
				at[cols[j].name] = j
			}
		}
	}
	find := func(name, what string) (*csvColumn, error) {
		j, ok := at[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: %s column %q: no column of that name in the header (%s)", ErrCSV, what, name, strings.Join(first, ","))
		case j == label:
			return nil, fmt.Errorf("%w: %s column %q is the label column", ErrCSV, what, name)
		}
		return &cols[j], nil
	}
	for _, c := range opts.Categorical {
		col, err := find(c.Column, "categorical")
		if err != nil {
			return nil, 0, err
		}
		col.cats = c.Categories
	}
	for _, m := range opts.Missing {
		col, err := find(m.Column, "missing-value")
		if err != nil {
			return nil, 0, err
		}
		v := m.Value
		col.fill, col.indicator = &v, opts.MissingIndicator
	}
	for j := range cols {
		c := &cols[j]
		if c.label {
			continue
		}
		if c.cats == nil {
			c.rangeAt = numeric
			numeric++
		}
		if c.fill == nil {
			continue
		}
		// The declared value must be one the column can hold.
		if c.cats != nil && !slices.Contains(c.cats, *c.fill) {
			return nil, 0, fmt.Errorf("%w: missing value of column %q: %q is not one of its declared categories (%s)", ErrCSV, c.name, *c.fill, strings.Join(c.cats, ", "))
		}
		if _, err := parseFeature(*c.fill); c.cats == nil && err != nil {
			return nil, 0, fmt.Errorf("%w: missing value of column %q: %v", ErrCSV, c.name, err)
		}
	}
	return cols, numeric, nil
}

// encode appends the features of one cell of c (not missing) to t: its scaled value for a
// numeric column (by ranges, one for all or one per numeric column), its one-hot vector
// for a categorical one.
func (c *csvColumn) encode(t *Table, cell string, ranges []Range) *CSVError {
	if c.cats != nil {
		k := slices.Index(c.cats, cell)
		if k < 0 {
			return &CSVError{Msg: fmt.Sprintf("%q is not one of the declared categories (%s)", cell, strings.Join(c.cats, ", "))}
		}
		for i := range c.cats {
			t.values = append(t.values, float32(b2f(i == k)))
		}
		return nil
	}
	x, err := parseFeature(cell)
	if err != nil {
		return &CSVError{Msg: err.Error(), NotNumber: true}
	}
	rg := ranges[0]
	if len(ranges) > 1 {
		rg = ranges[c.rangeAt]
	}
	v := (x - rg.Min) / (rg.Max - rg.Min)
	if v < 0 || v > 1 {
		t.Clipped++
		v = min(max(v, 0), 1)
	}
	t.values = append(t.values, float32(v))
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// parseFeature reads one feature cell: a finite decimal number.
func parseFeature(s string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	return x, nil
}

// maxClasses bounds the number of classes of a CSV file: a label column of a million
// distinct values is a mistake (a feature chosen as the label), not a classification.
const maxClasses = 1 << 16

// setLabels maps the label cells to classes; see Table.
func (t *Table) setLabels(names []string) error {
	t.labels = make([]int32, len(names))
	integer := true
	maxLabel := 0
	for i, s := range names {
		k, err := strconv.Atoi(s)
		if err != nil || k < 0 || s != strconv.Itoa(k) {
			integer = false
			break
		}
		if k >= maxClasses {
			return fmt.Errorf("%w: example %d has label %d; at most %d classes", ErrCSV, i, k, maxClasses)
		}
		t.labels[i] = int32(k)
		maxLabel = max(maxLabel, k)
	}
	if integer {
		t.ClassNames = make([]string, maxLabel+1)
		for c := range t.ClassNames {
			t.ClassNames[c] = strconv.Itoa(c)
		}
		return nil
	}
	index := map[string]int32{}
	for _, s := range names {
		if s == "" {
			return fmt.Errorf("%w: an empty label", ErrCSV)
		}
		if _, ok := index[s]; !ok {
			if len(index) == maxClasses {
				return fmt.Errorf("%w: more than %d distinct labels; is the label column right?", ErrCSV, maxClasses)
			}
			index[s] = 0
		}
	}
	t.ClassNames = make([]string, 0, len(index))
	for s := range index {
		t.ClassNames = append(t.ClassNames, s)
	}
	slices.Sort(t.ClassNames)
	for c, s := range t.ClassNames {
		index[s] = int32(c)
	}
	for i, s := range names {
		t.labels[i] = index[s]
	}
	return nil
}
