package tuning

import (
	"slices"
	"strings"
)

// Param is one searched hyperparameter: its name and its candidate values, as text (the
// caller gives them their meaning, e.g. cmd/train parses them as its flags).
type Param struct {
	Name   string
	Values []string
}

// Space is a search space: every trial draws one value of each Param, uniformly and
// independently of the others.
type Space []Param

// Config is one candidate: Config[i] is a value of the Space's i-th Param.
type Config []string

// Configs returns every combination of the space's values, the last Param varying
// fastest.
func (s Space) Configs() []Config {
	out := []Config{{}}
	for _, p := range s {
		var next []Config
		for _, c := range out {
			for _, v := range p.Values {
				next = append(next, append(slices.Clone(c), v))
			}
		}
		out = next
	}
	return out
}

// Describe writes a configuration as "lr=1 clip=0.5".
func (s Space) Describe(c Config) string {
	parts := make([]string, len(c))
	for i, v := range c {
		parts[i] = s[i].Name + "=" + v
	}
	return strings.Join(parts, " ")
}

// Values returns a configuration as a map from each Param's name to its value.
func (s Space) Values(c Config) map[string]string {
	m := make(map[string]string, len(c))
	for i, v := range c {
		m[s[i].Name] = v
	}
	return m
}
