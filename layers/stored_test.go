package layers

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestCodecsRefuse: settings with unknown fields, trailing data, unknown initializers,
// wrong types, or any settings for a layer without them are errors naming the problem.
func TestCodecsRefuse(t *testing.T) {
	byKind := map[string]Codec{}
	for _, c := range Codecs() {
		byKind[c.Kind] = c
	}
	for _, tc := range []struct{ kind, settings, want string }{
		{"dense", `{"units":3,"init":"ones"}`, `initializer "ones"`},
		{"dense", `{"units":3}`, `initializer ""`},
		{"conv", `{"filters":3,"init":"glorot-uniform","bias":true}`, `unknown field "bias"`},
		{"maxpool", `{"kernel":[2,2]} {}`, "data after"},
		{"groupnorm", `{"groups":"2"}`, "cannot unmarshal"},
		{"scattering2d", `{"j":2,"l":8,"m":1}`, `unknown field "m"`},
		{"relu", `{"x":1}`, "takes no settings"},
		{"flatten", `[]`, "takes no settings"},
	} {
		c, ok := byKind[tc.kind]
		if !ok {
			t.Fatalf("kind %q not registered", tc.kind)
		}
		if l, err := c.Decode(json.RawMessage(tc.settings)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, %v; want an error mentioning %q", tc.kind, tc.settings, l, err, tc.want)
		}
	}
}

// FuzzCodecs: whatever settings a file holds, each kind's Decode fails cleanly or gives a
// layer of its type and kind that encodes to settings decoding to the same layer.
func FuzzCodecs(f *testing.F) {
	for _, s := range []string{
		`{"units":10,"no_bias":false,"init":"glorot-uniform"}`,
		`{"filters":16,"kernel":[8,8],"stride":[2,2],"padding":[3,3],"no_bias":false,"init":"he-normal"}`,
		`{"kernel":[2,2],"stride":[1,1],"padding":[0,0]}`,
		`{"groups":9,"no_affine":true}`,
		`{"height":24,"width":24}`,
		`{"j":2,"l":8}`,
		`{"bias":true}`,
		`{}`, `null`, ``, `[1]`,
	} {
		f.Add(s)
	}
	codecs := Codecs()
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range codecs {
			l, err := c.Decode(json.RawMessage(s))
			if err != nil {
				continue
			}
			if reflect.TypeOf(l) != c.Type || l.Kind() != c.Kind {
				t.Fatalf("%s decoded %q to %T (kind %q)", c.Kind, s, l, l.Kind())
			}
			raw, err := c.Encode(l)
			if err != nil {
				t.Fatalf("%s: encode %#v: %v", c.Kind, l, err)
			}
			back, err := c.Decode(raw)
			if err != nil || !reflect.DeepEqual(back, l) {
				t.Fatalf("%s: %#v stored as %s decodes to %#v (%v)", c.Kind, l, raw, back, err)
			}
		}
	})
}
