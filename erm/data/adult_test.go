package data

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// Six lines of adult.data and two of adult.test in the UCI format (the first lines of
// the real files, with "?" put in as the real files have them and a Cuba and a second
// Black record so that every rule below has a case).
const adultTrainFixture = `39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K
50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, United-States, <=50K
38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, White, Male, 0, 0, 40, United-States, <=50K
53, Private, 234721, 11th, 7, Married-civ-spouse, Handlers-cleaners, Husband, Black, Male, 0, 0, 40, United-States, <=50K
28, Private, 338409, Bachelors, 13, Married-civ-spouse, Prof-specialty, Wife, Black, Female, 0, 0, 40, Cuba, <=50K
37, ?, 284582, Masters, 14, Married-civ-spouse, ?, Wife, White, Female, 0, 1902, 40, ?, >50K

`

const adultTestFixture = `|1x3 Cross validator
25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, 0, 40, United-States, <=50K.
44, ?, 160323, Some-college, 10, Married-civ-spouse, ?, Husband, White, Male, 7688, 0, 50, ?, >50K.
`

func readAdultString(t *testing.T, s string) *AdultTable {
	t.Helper()
	tab, err := ReadAdult(strings.NewReader(s), AdultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestReadAdultFixture(t *testing.T) {
	tr := readAdultString(t, adultTrainFixture)
	te := readAdultString(t, adultTestFixture)
	if len(tr.Records) != 6 || len(te.Records) != 2 {
		t.Fatalf("read %d and %d records, want 6 and 2", len(tr.Records), len(te.Records))
	}
	if got := tr.Labels; got[0] != -1 || got[5] != 1 {
		t.Errorf("train labels %v, want -1 … +1", got)
	}
	if got := te.Labels; got[0] != -1 || got[1] != 1 {
		t.Errorf("test labels %v (trailing '.'), want [-1 1]", got)
	}
	r := tr.Records[5]
	if r.Numeric != [6]float64{37, 284582, 14, 0, 1902, 40} {
		t.Errorf("numeric %v", r.Numeric)
	}
	if r.Categorical != [8]string{"?", "Masters", "Married-civ-spouse", "?", "Wife", "White", "Female", "?"} {
		t.Errorf("categorical %q", r.Categorical)
	}
}

// TestEncodeAdultBruteForce checks EncodeAdult against a computation written out by
// hand from the fixture: the indicator columns and each row's indicators were counted
// by hand (categories over both files, most frequent dropped, "?" replaced by the
// mode), the numeric columns are copied from the lines, and the scaling is redone here
// with gonum's stat and plain loops.
func TestEncodeAdultBruteForce(t *testing.T) {
	wantNames := []string{"age", "education-num", "capital-gain", "capital-loss", "hours-per-week",
		// workclass: Private 4 (dropped), Self-emp-not-inc 1, State-gov 1
		"workclass=Self-emp-not-inc", "workclass=State-gov",
		// marital-status: Married-civ-spouse 5 (dropped), Never-married 2, Divorced 1
		"marital-status=Never-married", "marital-status=Divorced",
		// occupation: Handlers-cleaners 2 (dropped), the others 1, by name
		"occupation=Adm-clerical", "occupation=Exec-managerial", "occupation=Machine-op-inspct", "occupation=Prof-specialty",
		// relationship: Husband 3 (dropped), Not-in-family 2, Wife 2, Own-child 1
		"relationship=Not-in-family", "relationship=Wife", "relationship=Own-child",
		// race: White 5 (dropped), Black 3; sex: Male 6 (dropped), Female 2
		"race=Black", "sex=Female",
		// native-country: United-States 5 (dropped), Cuba 1
		"native-country=Cuba"}
	numTrain := [][]float64{ // age, education-num, capital-gain, capital-loss, hours
		{39, 13, 2174, 0, 40}, {50, 13, 0, 0, 13}, {38, 9, 0, 0, 40},
		{53, 7, 0, 0, 40}, {28, 13, 0, 0, 40}, {37, 14, 0, 1902, 40}}
	numTest := [][]float64{{25, 7, 0, 0, 40}, {44, 10, 7688, 0, 50}}
	// The indicators set in each row. Train modes: workclass Private, occupation
	// Handlers-cleaners, native-country United-States (all dropped columns), so the
	// last training row's "?" set nothing. The test file's own occupation mode is
	// Machine-op-inspct (both its values are once; it sorts first).
	indTrain := [][]string{
		{"workclass=State-gov", "marital-status=Never-married", "occupation=Adm-clerical", "relationship=Not-in-family"},
		{"workclass=Self-emp-not-inc", "occupation=Exec-managerial"},
		{"marital-status=Divorced", "relationship=Not-in-family"},
		{"race=Black"},
		{"occupation=Prof-specialty", "relationship=Wife", "race=Black", "sex=Female", "native-country=Cuba"},
		{"relationship=Wife", "sex=Female"}}
	indTest := [][]string{
		{"marital-status=Never-married", "occupation=Machine-op-inspct", "relationship=Own-child", "race=Black"},
		{}}
	indTestRefit := [][]string{indTest[0], {"occupation=Machine-op-inspct"}}

	// standardise scales each numeric column of rows by the mean and sd of that column of
	// by (a zero sd counting as 1).
	standardise := func(rows, by [][]float64) [][]float64 {
		out := make([][]float64, len(rows))
		for i := range out {
			out[i] = make([]float64, 5)
		}
		for j := range 5 {
			col := make([]float64, len(by))
			for i := range by {
				col[i] = by[i][j]
			}
			m, sd := stat.PopMeanStdDev(col, nil)
			if sd == 0 {
				sd = 1
			}
			for i := range rows {
				out[i][j] = (rows[i][j] - m) / sd
			}
		}
		return out
	}
	build := func(num [][]float64, ind [][]string) [][]float64 {
		var out [][]float64
		for i := range num {
			row := append([]float64(nil), num[i]...)
			for _, name := range wantNames[5:] {
				v := 0.0
				for _, s := range ind[i] {
					if s == name {
						v = 1
					}
				}
				row = append(row, v)
			}
			out = append(out, row)
		}
		return out
	}
	finish := func(train, test [][]float64) ([][]float64, [][]float64) {
		for j := range wantNames {
			m := 0.0
			for i := range train {
				m = math.Max(m, math.Abs(train[i][j]))
			}
			for _, rows := range [][][]float64{train, test} {
				for i := range rows {
					if m > 0 {
						rows[i][j] /= m
					}
				}
			}
		}
		for _, rows := range [][][]float64{train, test} {
			for _, row := range rows {
				s := 0.0
				for _, v := range row {
					s += v * v
				}
				for j := range row {
					row[j] /= math.Sqrt(s)
				}
			}
		}
		return train, test
	}
	stdTrain := standardise(numTrain, numTrain)
	cases := []struct {
		name          string
		refit         bool
		testNum       [][]float64
		testIndicator [][]string
	}{
		{"train statistics", false, standardise(numTest, numTrain), indTest},
		{"refit on test (the authors' code)", true, standardise(numTest, numTest), indTestRefit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantTrain, wantTest := finish(build(stdTrain, indTrain), build(tc.testNum, tc.testIndicator))
			tr, te, names, err := EncodeAdult(readAdultString(t, adultTrainFixture), readAdultString(t, adultTestFixture), AdultEncoding{RefitOnTest: tc.refit})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(names, " ") != strings.Join(wantNames, " ") {
				t.Fatalf("names\n%q\nwant\n%q", names, wantNames)
			}
			for _, c := range []struct {
				what string
				ds   *Dataset
				want [][]float64
			}{{"train", tr, wantTrain}, {"test", te, wantTest}} {
				if c.ds.Len() != len(c.want) || c.ds.Dim() != len(wantNames) {
					t.Fatalf("%s: %d×%d, want %d×%d", c.what, c.ds.Len(), c.ds.Dim(), len(c.want), len(wantNames))
				}
				for i := range c.want {
					for j, w := range c.want[i] {
						if g := c.ds.X.At(i, j); math.Abs(g-w) > 1e-12 {
							t.Errorf("%s[%d][%s] = %v, want %v", c.what, i, wantNames[j], g, w)
						}
					}
				}
				if err := c.ds.Validate(); err != nil || c.ds.L2Bound != 1 {
					t.Errorf("%s: Validate %v, L2Bound %v", c.what, err, c.ds.L2Bound)
				}
			}
		})
	}
}

func TestReadAdultErrors(t *testing.T) {
	good := "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K\n"
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "no records"},
		{"only the banner", "|1x3 Cross validator\n\n", "no records"},
		{"short line", good + "39, State-gov, 77516\n", "line 2: 3 comma-separated fields"},
		{"numeric missing", strings.Replace(good, "77516", "?", 1), `line 1: fnlwgt "?" is not a number`},
		{"NaN", strings.Replace(good, " 40,", " NaN,", 1), `line 1: hours-per-week "NaN"`},
		{"bad class", strings.Replace(good, "<=50K", "50K", 1), `line 1: class "50K"`},
		{"empty category", strings.Replace(good, "White", "", 1), "line 1: race"},
		{"long line", good + strings.Repeat("x", 5000) + "\n", "line 2: line too long"},
		{"binary", "\x00\x01\x02", "1 comma-separated fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadAdult(strings.NewReader(tc.in), AdultOptions{})
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrFormat naming %q", err, tc.want)
			}
		})
	}
	_, err := ReadAdult(strings.NewReader(strings.Repeat(good, 4)), AdultOptions{MaxRows: 3})
	if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "line 4: more than 3 records") {
		t.Fatalf("MaxRows: err = %v", err)
	}
	many := &strings.Builder{}
	for i := range adultMaxCategory + 1 {
		many.WriteString(strings.Replace(good, "State-gov", "w"+strings.Repeat("x", i%50)+string(rune('a'+i/50)), 1))
	}
	if _, err := ReadAdult(strings.NewReader(many.String()), AdultOptions{}); err == nil || !strings.Contains(err.Error(), "distinct values") {
		t.Fatalf("distinct values: err = %v", err)
	}
}

func FuzzReadAdult(f *testing.F) {
	f.Add([]byte(adultTrainFixture))
	f.Add([]byte(adultTestFixture))
	f.Add([]byte("1,a,2,b,3,c,d,e,f,g,4,5,6,h,>50K.\n|x\n\n"))
	f.Add([]byte("1e308,a,-0,b,0x1p3,c,d,e,f,g,4,5,6,?,<=50K\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		tab, err := ReadAdult(strings.NewReader(string(in)), AdultOptions{MaxRows: 100})
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		if len(tab.Records) == 0 || len(tab.Records) != len(tab.Labels) || len(tab.Records) > 100 {
			t.Fatalf("%d records, %d labels", len(tab.Records), len(tab.Labels))
		}
		for _, y := range tab.Labels {
			if y != 1 && y != -1 {
				t.Fatalf("label %v", y)
			}
		}
		// Whatever parses encodes to finite unit rows.
		tr, _, _, err := EncodeAdult(tab, tab, AdultEncoding{})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}
