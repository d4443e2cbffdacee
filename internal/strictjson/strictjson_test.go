package strictjson

import (
	"strings"
	"testing"
)

func TestUnmarshal(t *testing.T) {
	type s struct {
		A int `json:"a"`
	}
	var v s
	if err := Unmarshal([]byte(` {"a": 3} `), &v); err != nil || v.A != 3 {
		t.Errorf("valid value: %+v, %v", v, err)
	}
	for in, want := range map[string]string{
		`{"a":1,"b":2}`: `unknown field "b"`,
		`{"a":1} {}`:    "data after",
		`{"a":1}x`:      "data after",
		`{"a":"x"}`:     "cannot unmarshal",
		``:              "EOF",
		`{"a":1`:        "EOF",
	} {
		if err := Unmarshal([]byte(in), &v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error mentioning %q", in, err, want)
		}
	}
}
