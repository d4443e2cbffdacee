package dpoptim

import "testing"

// Clone shares nothing; Equal treats nil and empty alike and compares everything else.
func TestStateCloneEqual(t *testing.T) {
	rule := State{Step: 2, Vectors: map[string][]float64{"m": {1, 2}, "v": nil}, Scalars: map[string]float64{"b2": 3}}
	s := State{Step: 2, Noise: []byte{7, 8}, Rule: &rule}
	c := s.Clone()
	if !c.Equal(s) || !s.Equal(c) {
		t.Fatalf("clone %v differs from %v", c, s)
	}
	c.Rule.Vectors["m"][0] = 9
	c.Rule.Scalars["b2"] = 4
	c.Noise[0] = 0
	if rule.Vectors["m"][0] != 1 || rule.Scalars["b2"] != 3 || s.Noise[0] != 7 {
		t.Error("changing the clone changed the original")
	}
	empty := State{Step: 2, Noise: []byte{7, 8}, Rule: &State{Step: 2, Vectors: map[string][]float64{"m": {1, 2}, "v": {}},
		Scalars: map[string]float64{"b2": 3}}}
	if !empty.Equal(s) {
		t.Error("an empty vector differs from a nil one")
	}
	for name, o := range map[string]State{
		"step":    {Step: 3, Noise: s.Noise, Rule: &rule},
		"noise":   {Step: 2, Noise: []byte{7}, Rule: &rule},
		"no rule": {Step: 2, Noise: s.Noise},
		"rule":    {Step: 2, Noise: s.Noise, Rule: &State{Step: 2}},
	} {
		if o.Equal(s) || s.Equal(o) {
			t.Errorf("%s: %v equals %v", name, o, s)
		}
	}
}
