package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/internal/safeio"
)

// The columns of the UCI Adult files (adult.data, adult.test, adult.names), split by
// kind. Every line holds the 14 attributes in the file order age, workclass, fnlwgt,
// education, education-num, marital-status, occupation, relationship, race, sex,
// capital-gain, capital-loss, hours-per-week, native-country, then the income class.
var (
	AdultNumeric     = [6]string{"age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"}
	AdultCategorical = [8]string{"workclass", "education", "marital-status", "occupation", "relationship", "race", "sex", "native-country"}
)

// adultKinds maps a file column (0..13) to its place in AdultNumeric (≥ 0) or
// AdultCategorical (−1−k).
var adultKinds = [14]int{0, -1, 1, -2, 2, -3, -4, -5, -6, -7, 3, 4, 5, -8}

// AdultMissing is how the UCI files write a missing categorical value.
const AdultMissing = "?"

// AdultRecord is one person of the UCI Adult files, uncoded.
type AdultRecord struct {
	// Numeric holds the values of AdultNumeric, in that order.
	Numeric [6]float64
	// Categorical holds the values of AdultCategorical, in that order, with
	// surrounding blanks removed; AdultMissing where the file has "?".
	Categorical [8]string
}

// AdultTable is a parsed adult.data or adult.test file.
type AdultTable struct {
	Records []AdultRecord
	// Labels is +1 for ">50K" and −1 for "<=50K" (with or without the trailing "."
	// that adult.test adds).
	Labels []float64
}

// AdultOptions bounds what ReadAdult accepts; the zero value reads both UCI files.
type AdultOptions struct {
	// MaxRows caps the number of records (0 means DefaultAdultMaxRows), so that a huge
	// or hostile file is refused with bounded memory.
	MaxRows int
}

// DefaultAdultMaxRows is ten times the 48,842 records of adult.data and adult.test
// together: about 100 MB of records at most.
const DefaultAdultMaxRows = 500_000

const (
	adultMaxLine     = 4096 // a real line is under 200 bytes
	adultMaxCategory = 1024 // distinct values of one categorical column (real: at most 42)
	adultMaxValueLen = 64   // bytes of one categorical value (real: at most 26)
	adultMaxNumeric  = 1e12 // real: at most 1,490,400 (fnlwgt); keeps the sums finite
)

// ReadAdult parses the raw UCI Adult format (adult.data or adult.test): one record a
// line, 15 comma-separated fields (blanks around a field are ignored), the six numeric
// attributes numbers of magnitude at most 1e12, the categorical ones any text up to 64 bytes ("?" for a
// missing value, kept as AdultMissing), the class "<=50K" or ">50K" with an optional
// trailing ".". Blank lines and lines starting with '|' (adult.test's first line,
// "|1x3 Cross validator") are skipped. Errors wrap ErrFormat and name the line; memory
// is bounded by opts.MaxRows and a line limit of 4 KiB.
func ReadAdult(r io.Reader, opts AdultOptions) (*AdultTable, error) {
	maxRows := opts.MaxRows
	if maxRows <= 0 {
		maxRows = DefaultAdultMaxRows
	}
	t := &AdultTable{}
	// Interning keeps one copy of each distinct value (and bounds how many there are).
	seen := make([]map[string]string, len(AdultCategorical))
	for k := range seen {
		seen[k] = map[string]string{}
	}
	sc := bufio.NewScanner(safeio.LineLimit(r, adultMaxLine))
	sc.Buffer(make([]byte, adultMaxLine+2), adultMaxLine+2)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '|' {
			continue
		}
		fields := strings.Split(text, ",")
		if len(fields) != 15 {
			return nil, fmt.Errorf("adult: line %d: %d comma-separated fields, want 15 (14 attributes and the class): %w", line, len(fields), ErrFormat)
		}
		if len(t.Records) >= maxRows {
			return nil, fmt.Errorf("adult: line %d: more than %d records: %w", line, maxRows, ErrFormat)
		}
		var rec AdultRecord
		for col, f := range fields[:14] {
			f = strings.TrimSpace(f)
			if k := adultKinds[col]; k >= 0 {
				v, err := strconv.ParseFloat(f, 64)
				if err != nil || !(math.Abs(v) <= adultMaxNumeric) {
					return nil, fmt.Errorf("adult: line %d: %s %q is not a number of magnitude at most 1e12: %w", line, AdultNumeric[k], clipString(f), ErrFormat)
				}
				rec.Numeric[k] = v
				continue
			}
			k := -1 - adultKinds[col]
			if f == "" || len(f) > adultMaxValueLen {
				return nil, fmt.Errorf("adult: line %d: %s %q: want a value of 1 to %d bytes (\"?\" if missing): %w", line, AdultCategorical[k], clipString(f), adultMaxValueLen, ErrFormat)
			}
			s, ok := seen[k][f]
			if !ok {
				if len(seen[k]) >= adultMaxCategory {
					return nil, fmt.Errorf("adult: line %d: %s has more than %d distinct values: %w", line, AdultCategorical[k], adultMaxCategory, ErrFormat)
				}
				s = strings.Clone(f)
				seen[k][s] = s
			}
			rec.Categorical[k] = s
		}
		var y float64
		switch strings.TrimSuffix(strings.TrimSpace(fields[14]), ".") {
		case "<=50K":
			y = -1
		case ">50K":
			y = 1
		default:
			return nil, fmt.Errorf("adult: line %d: class %q: want <=50K or >50K (a trailing \".\" allowed): %w", line, clipString(strings.TrimSpace(fields[14])), ErrFormat)
		}
		t.Records = append(t.Records, rec)
		t.Labels = append(t.Labels, y)
	}
	if err := sc.Err(); err != nil {
		if le := (*safeio.LineError)(nil); errors.As(err, &le) {
			return nil, fmt.Errorf("adult: %v; the file is not UCI Adult data, or is damaged: %w", le, ErrFormat)
		}
		return nil, fmt.Errorf("adult: after line %d: %w", line, err)
	}
	if len(t.Records) == 0 {
		return nil, fmt.Errorf("adult: no records: %w", ErrFormat)
	}
	return t, nil
}

// AdultEncoding says how EncodeAdult fits its statistics.
type AdultEncoding struct {
	// RefitOnTest standardises the test file's numeric columns with the test file's
	// own mean and standard deviation and imputes its missing values with the test
	// file's own modes, as the DP-SCD authors' preprocessor does (it calls its
	// pipeline's fit_transform on adult.test). False uses the training file's
	// statistics for both files.
	RefitOnTest bool
}

// adultDropped are the columns the DP-SCD authors' preprocessor drops: fnlwgt (a
// census sampling weight) and education (education-num codes it).
var adultDropped = []string{"fnlwgt", "education"}

// EncodeAdult turns the raw UCI Adult training and test files into the 81-feature
// design matrices of the DP-SCD paper (Damaskinos et al., App. E: "we convert the
// categorical variables to dummy/indicator ones and replace the missing values with the
// most frequently occurring value of the corresponding feature"), following the
// authors' preprocessor (github.com/gdamaskinos/dpscd, preprocessor.py, adult()):
//
//  1. fnlwgt and education are dropped;
//  2. the numeric age, education-num, capital-gain, capital-loss and hours-per-week
//     are standardised, (x − mean)/sd with the population sd (1 where it is 0), the
//     training file's mean and sd (each file's own with RefitOnTest);
//  3. a missing ("?") categorical value is replaced by the column's most frequent
//     value in the training file (each file's own with RefitOnTest; ties go to the
//     value that sorts first);
//  4. each categorical column (workclass, marital-status, occupation, relationship,
//     race, sex, native-country) becomes one indicator per value seen in either file
//     (before imputation), ordered by decreasing count over both files (ties by name),
//     the most frequent one dropped (pandas get_dummies(drop_first=True));
//  5. every feature is divided by its largest absolute value in the training file
//     (features that are 0 there are left alone), and
//  6. every row is scaled to unit L2 norm.
//
// On the real files this gives 5 + 7 + 6 + 13 + 5 + 4 + 1 + 40 = 81 features. The
// returned names say what each column is ("age", "workclass=Self-emp-not-inc", …);
// labels are ±1 (+1 for >50K). Both data sets get L2Bound = 1 and L1Bound = √d, as
// Normalize records. The statistics of steps 2–5 are read off the data, so this
// preprocessing is not private (in the paper as here).
func EncodeAdult(train, test *AdultTable, enc AdultEncoding) (trainDS, testDS *Dataset, names []string, err error) {
	for _, t := range []*AdultTable{train, test} {
		if t == nil || len(t.Records) == 0 || len(t.Records) != len(t.Labels) {
			return nil, nil, nil, fmt.Errorf("adult: empty table or records and labels of different lengths: %w", ErrInvalid)
		}
	}
	var numCols, catCols []int
	for k, name := range AdultNumeric {
		if !slices.Contains(adultDropped, name) {
			numCols = append(numCols, k)
			names = append(names, name)
		}
	}
	// Categories per column over both files, most frequent first.
	var levels [][]string
	for k, name := range AdultCategorical {
		if slices.Contains(adultDropped, name) {
			continue
		}
		catCols = append(catCols, k)
		count := map[string]int{}
		for _, t := range []*AdultTable{train, test} {
			for i := range t.Records {
				if v := t.Records[i].Categorical[k]; v != AdultMissing {
					count[v]++
				}
			}
		}
		vals := make([]string, 0, len(count))
		for v := range count {
			vals = append(vals, v)
		}
		slices.SortFunc(vals, func(a, b string) int {
			if count[a] != count[b] {
				return count[b] - count[a]
			}
			return strings.Compare(a, b)
		})
		if len(vals) > 0 {
			vals = vals[1:] // drop_first: the most frequent value is the reference
		}
		levels = append(levels, vals)
		for _, v := range vals {
			names = append(names, name+"="+v)
		}
	}
	trainStats := adultStatsOf(train)
	encode := func(t *AdultTable, st adultStats) *Dataset {
		x := mat.NewDense(len(t.Records), len(names), nil)
		for i := range t.Records {
			rec := &t.Records[i]
			row := x.RawRowView(i)
			j := 0
			for _, k := range numCols {
				row[j] = (rec.Numeric[k] - st.mean[k]) / st.sd[k]
				j++
			}
			for c, k := range catCols {
				v := rec.Categorical[k]
				if v == AdultMissing {
					v = st.mode[k]
				}
				if p := slices.Index(levels[c], v); p >= 0 {
					row[j+p] = 1
				}
				j += len(levels[c])
			}
		}
		return &Dataset{X: x, Y: slices.Clone(t.Labels)}
	}
	testStats := trainStats
	if enc.RefitOnTest {
		testStats = adultStatsOf(test)
	}
	trainDS, testDS = encode(train, trainStats), encode(test, testStats)
	// Max-abs scaling fitted on the training file, then unit rows.
	maxAbs := trainDS.maxAbs()
	trainDS.normalizeBy(maxAbs)
	testDS.normalizeBy(maxAbs)
	return trainDS, testDS, names, nil
}

// adultStats are one file's column means, population sds and modes.
type adultStats struct {
	mean, sd [6]float64
	mode     [8]string
}

func adultStatsOf(t *AdultTable) adultStats {
	var st adultStats
	n := float64(len(t.Records))
	for k := range st.mean {
		var s float64
		for i := range t.Records {
			s += t.Records[i].Numeric[k]
		}
		st.mean[k] = s / n
		var ss float64
		for i := range t.Records {
			dv := t.Records[i].Numeric[k] - st.mean[k]
			ss += dv * dv
		}
		st.sd[k] = math.Sqrt(ss / n)
		if st.sd[k] == 0 {
			st.sd[k] = 1 // sklearn's StandardScaler leaves a constant column at 0
		}
	}
	for k := range st.mode {
		count := map[string]int{}
		for i := range t.Records {
			if v := t.Records[i].Categorical[k]; v != AdultMissing {
				count[v]++
			}
		}
		best := ""
		for v, c := range count {
			if c > count[best] || (c == count[best] && v < best) {
				best = v
			}
		}
		st.mode[k] = best // "" (no indicator set) when every value is missing
	}
	return st
}
