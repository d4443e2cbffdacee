package datasets

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// labelCells are the label cells of a CSV file as written (trimmed), with the line each
// is on.
type labelCells struct {
	names []string
	lines []int
}

// warnShow bounds the values a label warning lists.
const warnShow = 5

// warning returns Table.LabelWarning for the cells, read as classes named classes.
// Labels of which one is not a number are names: nothing to warn about. Numeric labels
// are expected to be the class numbers 0 to K−1: a negative or fractional one, or one
// written otherwise (1.0, 01, +1), makes every label a name, sorted as text, and
// integers with gaps make classes without examples. Either is likely a mistake (a wrong
// label column, labels numbered from 1, a float export), so it is named with the line
// of its first occurrence.
func (lc *labelCells) warning(classes []string) string {
	canonical := true
	for _, s := range lc.names {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return "" // named classes
		}
		if k, err := strconv.Atoi(s); err != nil || k < 0 || s != strconv.Itoa(k) {
			canonical = false
		}
	}
	if len(lc.names) == 0 {
		return ""
	}
	if canonical {
		return lc.gapWarning(len(classes))
	}
	var odd []string
	seen := map[string]bool{}
	fractional := false
	first := 0
	for i, s := range lc.names {
		if k, err := strconv.Atoi(s); (err == nil && k >= 0 && s == strconv.Itoa(k)) || seen[s] {
			continue
		}
		if len(odd) == 0 {
			first = lc.lines[i]
		}
		seen[s] = true
		odd = append(odd, s)
		if x, _ := strconv.ParseFloat(s, 64); x != math.Trunc(x) {
			fractional = true
		}
	}
	msg := fmt.Sprintf("numeric labels that are not class numbers 0, 1, 2, …: %s (first on line %d); all %d distinct labels are read as class names, sorted as text: %s",
		listSome(odd), first, len(classes), classMapping(classes))
	if fractional {
		msg += "; a fractional label is usually a feature or a regression target: is the label column right?"
	}
	return msg
}

// gapWarning names the classes without examples of integer labels 0 to k−1 ("" when
// every class has one).
func (lc *labelCells) gapWarning(k int) string {
	have := make([]bool, k)
	for _, s := range lc.names {
		c, _ := strconv.Atoi(s)
		have[c] = true
	}
	var missing []string
	lowest := -1
	for c, ok := range have {
		if !ok {
			missing = append(missing, strconv.Itoa(c))
		} else if lowest < 0 {
			lowest = c
		}
	}
	if len(missing) == 0 {
		return ""
	}
	msg := fmt.Sprintf("integer labels are class numbers 0 to %d, but no example has label %s: %d of the %d classes have no examples",
		k-1, listSome(missing), len(missing), k)
	if lowest > 0 {
		msg += fmt.Sprintf(" (the labels start at %d; number the classes from 0)", lowest)
	}
	return msg
}

// listSome lists up to warnShow values: "a, b, c" or "a, b, c, d, e and 7 more".
func listSome(v []string) string {
	if len(v) <= warnShow {
		return strings.Join(v, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(v[:warnShow], ", "), len(v)-warnShow)
}

// classMapping shows the first classes with their names: 0=-1, 1=0, 2=1.5, … (12 in all).
func classMapping(names []string) string {
	const show = 8
	var parts []string
	for c, s := range names {
		if c == show {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(names)))
			break
		}
		parts = append(parts, fmt.Sprintf("%d=%s", c, s))
	}
	return strings.Join(parts, ", ")
}
