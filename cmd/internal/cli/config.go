package cli

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/safeio"
)

// MaxConfigFile bounds the size of a -config file: a few hundred flags are a few kilobytes.
const MaxConfigFile = 1 << 20

// ApplyConfig sets the flags of flags from the -config file at path: one "name = value" a
// line (the name with or without its leading "-"; the value the rest of the line, trimmed,
// or a Go-quoted string "…"), blank lines and lines starting with "#" ignored. A flag in
// given (those on the command line) keeps its value: the command line wins. It returns the
// names it set, in the file's order. An unknown flag, a flag named twice, a value its flag
// refuses, or a line without "=" is a usage error naming the file and the line; self, the
// name of the -config flag itself, cannot be set from the file.
func ApplyConfig(flags *flag.FlagSet, path, self string, given map[string]bool) ([]string, error) {
	f, err := safeio.Open(path)
	if err != nil {
		return nil, exit.Usagef("-%s %s: %v", self, path, err)
	}
	defer f.Close()
	var set []string
	seen := map[string]int{}
	lines := bufio.NewScanner(safeio.LimitReader(f, MaxConfigFile, "a config file"))
	lines.Buffer(nil, 64<<10)
	for n := 1; lines.Scan(); n++ {
		line := strings.TrimSpace(lines.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("-%s %s:%d", self, path, n)
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, exit.Usagef("%s: %q is not name = value", where, line)
		}
		name = strings.TrimPrefix(strings.TrimSpace(name), "-")
		value = strings.TrimSpace(value)
		if strings.HasPrefix(value, `"`) {
			if value, err = strconv.Unquote(value); err != nil {
				return nil, exit.Usagef("%s: -%s: the value is not a quoted string: %v", where, name, err)
			}
		}
		switch {
		case name == self:
			return nil, exit.Usagef("%s: a config file cannot name another (-%s)", where, self)
		case flags.Lookup(name) == nil:
			return nil, exit.Usagef("%s: unknown flag -%s", where, name)
		case seen[name] > 0:
			return nil, exit.Usagef("%s: -%s is already set on line %d", where, name, seen[name])
		}
		seen[name] = n
		if given[name] {
			continue // the command line wins
		}
		if err := flags.Set(name, value); err != nil {
			return nil, exit.Usagef("%s: -%s %s: %v", where, name, value, err)
		}
		set = append(set, name)
	}
	if err := lines.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line longer than %d bytes", 64<<10)
		}
		return nil, exit.Usagef("-%s %s: %v", self, path, err)
	}
	return set, nil
}
