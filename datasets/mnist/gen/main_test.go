package main

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// packageJSON writes pixel bytes the way the npm package stores them: v/255 rounded
// to 3 decimals (JavaScript's shortest number formatting drops trailing zeros).
func packageJSON(px []byte) []byte {
	var b strings.Builder
	b.WriteString(`{ "data": [`)
	for i, p := range px {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(math.Round(float64(p)/255*1000)/1000, 'f', -1, 64))
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func TestDecodeDigitRecoversEveryByte(t *testing.T) {
	px := make([]byte, 2*imageSize)
	for i := range px {
		px[i] = byte(i * 7) // every byte value occurs
	}
	got, err := decodeDigit(packageJSON(px))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, px) {
		t.Error("bytes not recovered")
	}
	// a sample of the package's own spelling: 0.2 = 51/255, 0.624 = 159/255, 0.992 = 253/255
	data := make([]string, imageSize)
	for i := range data {
		data[i] = "0"
	}
	data[0], data[1], data[2], data[3] = "0.2", "0.624", "0.992", "1"
	got, err = decodeDigit([]byte(`{"data":[` + strings.Join(data, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{51, 159, 253, 255}; !bytes.Equal(got[:4], want) {
		t.Errorf("decoded %v, want %v", got[:4], want)
	}
}

func TestDecodeDigitFailsLoudly(t *testing.T) {
	zeros := func(n int, last string) []byte {
		v := make([]string, n)
		for i := range v {
			v[i] = "0"
		}
		v[n-1] = last
		return []byte(`{"data":[` + strings.Join(v, ",") + `]}`)
	}
	for name, file := range map[string][]byte{
		"not json":           []byte(`{"data":`),
		"empty":              []byte(`{"data":[]}`),
		"not whole images":   zeros(imageSize+1, "0"),
		"not byte/255":       zeros(imageSize, "0.5"), // 127.5/255: no byte rounds to 0.5
		"more decimals":      zeros(imageSize, "0.6235"),
		"above one":          zeros(imageSize, "1.004"),
		"negative":           zeros(imageSize, "-0.004"),
		"wrong rounding 3dp": zeros(imageSize, "0.623"), // 159/255 = 0.62353 rounds to 0.624
	} {
		if _, err := decodeDigit(file); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestInterleave(t *testing.T) {
	img := func(v byte) []byte { return bytes.Repeat([]byte{v}, imageSize) }
	var digits [10][]byte
	// digit 0: two images (positions 1/4, 3/4); digit 1: one (1/2); digit 2: one (1/2,
	// tie with digit 1 goes to the smaller digit)
	digits[0] = append(img(10), img(11)...)
	digits[1] = img(20)
	digits[2] = img(30)
	pixels, labels := interleave(digits)
	if want := []int{0, 1, 2, 0}; !slices.Equal(labels, want) {
		t.Fatalf("labels %v, want %v", labels, want)
	}
	for i, want := range []byte{10, 20, 30, 11} {
		if pixels[i*imageSize] != want || pixels[(i+1)*imageSize-1] != want {
			t.Errorf("image %d starts with %d, want %d", i, pixels[i*imageSize], want)
		}
	}
}

func TestEncodeHeaders(t *testing.T) {
	// IDX headers as specified on the MNIST page: 0x00000803 n 28 28 / 0x00000801 n
	if got, want := fmt.Sprintf("% x", encodeImages(nil, 3)), "00 00 08 03 00 00 00 03 00 00 00 1c 00 00 00 1c"; got != want {
		t.Errorf("image header %s, want %s", got, want)
	}
	if got, want := fmt.Sprintf("% x", encodeLabels([]byte{7, 1})), "00 00 08 01 00 00 00 02 07 01"; got != want {
		t.Errorf("label file %s, want %s", got, want)
	}
}
