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
		`{"body":[{"type":"conv","settings":{"filters":2,"kernel":[3,3],"stride":[1,1],"padding":[1,1],"no_bias":false,"init":"he-normal"}},{"type":"relu"}],"shortcut":[],"scale_norm":1}`,
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

// registeredElsewhere stands for a layer of another package, stored with Register.
type registeredElsewhere struct {
	Flatten
	Note string
}

func init() { Register[registeredElsewhere]("test.elsewhere") }

// TestRegister: a layer registered with Register is found by its type and its name, is
// stored as its JSON encoding, is not listed among this package's Codecs, and a second
// registration of its name or type panics.
func TestRegister(t *testing.T) {
	c, ok := CodecFor(registeredElsewhere{Note: "x"})
	if !ok || c.Kind != "test.elsewhere" || c.Type != reflect.TypeFor[registeredElsewhere]() {
		t.Fatalf("CodecFor: %+v, %v", c, ok)
	}
	if byName, ok := CodecByName("test.elsewhere"); !ok || byName.Type != c.Type {
		t.Fatalf("CodecByName: %+v, %v", byName, ok)
	}
	raw, err := c.Encode(registeredElsewhere{Note: "x"})
	if err != nil || string(raw) != `{"Note":"x"}` {
		t.Fatalf("Encode: %s, %v", raw, err)
	}
	if l, err := c.Decode(raw); err != nil || l != (registeredElsewhere{Note: "x"}) {
		t.Fatalf("Decode: %#v, %v", l, err)
	}
	if _, err := c.Decode(json.RawMessage(`{"Note":"x","Other":1}`)); err == nil {
		t.Error("unknown field accepted")
	}
	for _, k := range Codecs() {
		if k.Kind == "test.elsewhere" {
			t.Error("Codecs lists a layer of another package")
		}
	}
	if d, ok := CodecFor(Dense{Units: 3}); !ok || d.Kind != "dense" {
		t.Errorf("CodecFor(Dense): %+v, %v", d, ok)
	}
	if _, ok := CodecFor(struct{ Flatten }{}); ok {
		t.Error("an unregistered type has a codec")
	}
	for name, reg := range map[string]func(){
		"name":  func() { Register[struct{ Flatten }]("test.elsewhere") },
		"type":  func() { Register[registeredElsewhere]("test.other") },
		"empty": func() { Register[struct{ ReLU }]("") },
		"built": func() { Register[struct{ ReLU }]("dense") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: duplicate registration did not panic", name)
				}
			}()
			reg()
		}()
	}
}
