package main

import (
	"compress/gzip"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// writeFixtures writes into dir the files the docs' commands name and a newcomer brings:
// the table patients.csv (docs/own-data.md: 400 rows, three numeric features in 0:120,
// 60:220 and 0:400 and an outcome, healthy or sick), visits.csv (the same people with a
// sex, a smoker column and missing cells: the categorical example), the image folder
// photos/ (180 gray PNGs of bars, columns and dots, 28 to 36 pixels square) and
// phishing.txt (the DP-SCD paper's LIBSVM file, from erm/data/testdata, which docs/erm.md
// fetches with curl). The data are drawn with a fixed seed; the labels follow the
// features, so that training learns something.
func writeFixtures(dir string) error {
	rng := rand.New(rand.NewPCG(1, 2))
	var patients, visits strings.Builder
	patients.WriteString("age,pressure,cholesterol,outcome\n")
	visits.WriteString("age,sex,smoker,weight,status\n")
	for i := range 400 {
		age, pressure, chol := 20+rng.Float64()*80, 90+rng.Float64()*100, 120+rng.Float64()*220
		risk := (age-60)/20 + (pressure-140)/25 + (chol-230)/60 + rng.NormFloat64()
		outcome := "healthy"
		if risk > 0 {
			outcome = "sick"
		}
		fmt.Fprintf(&patients, "%.0f,%.0f,%.0f,%s\n", age, pressure, chol, outcome)
		sex, smoker := []string{"F", "M"}[i%2], []string{"no", "yes"}[rng.IntN(2)]
		if smoker == "yes" {
			risk += 1
		}
		status := "healthy"
		if risk > 0.5 {
			status = "ill"
		}
		ageCell := fmt.Sprintf("%.0f", age)
		if i%13 == 5 {
			ageCell = ""
		}
		if i%17 == 3 {
			smoker = "NA"
		}
		fmt.Fprintf(&visits, "%s,%s,%s,%.0f,%s\n", ageCell, sex, smoker, 50+rng.Float64()*150, status)
	}
	if err := os.WriteFile(filepath.Join(dir, "patients.csv"), []byte(patients.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "visits.csv"), []byte(visits.String()), 0o644); err != nil {
		return err
	}
	for _, class := range []string{"bars", "columns", "dots"} {
		folder := filepath.Join(dir, "photos", class)
		if err := os.MkdirAll(folder, 0o755); err != nil {
			return err
		}
		for i := range 60 {
			if err := writePattern(filepath.Join(folder, fmt.Sprintf("%02d.png", i)), class, 28+rng.IntN(9), rng); err != nil {
				return err
			}
		}
	}
	return gunzip(filepath.Join(dir, "erm", "data", "testdata", "phishing.gz"), filepath.Join(dir, "phishing.txt"))
}

// writePattern writes a size×size gray PNG of horizontal bars, vertical columns or dots,
// at a random phase, with noise.
func writePattern(path, class string, size int, rng *rand.Rand) error {
	img := image.NewGray(image.Rect(0, 0, size, size))
	period, phase := 4+rng.IntN(4), rng.IntN(8)
	for y := range size {
		for x := range size {
			on := false
			switch class {
			case "bars":
				on = (y+phase)%period < period/2
			case "columns":
				on = (x+phase)%period < period/2
			default:
				on = (x+phase)%period < 2 && (y+phase)%period < 2
			}
			v := 40 + rng.IntN(40)
			if on {
				v = 180 + rng.IntN(60)
			}
			img.SetGray(x, y, color.Gray{Y: uint8(v)})
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func gunzip(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	z, err := gzip.NewReader(in)
	if err != nil {
		return fmt.Errorf("%s: %v", from, err)
	}
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, z); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
