package config

import (
	"fmt"
	"slices"
	"strings"
)

// UnknownVariables are warnings about the FOCUSGATE_ variables of environ
// (NAME=value pairs, as os.Environ gives them) that name no setting: a
// misspelt name is otherwise silently ignored, and the gateway runs with a
// default the user thinks they changed. Each names the nearest setting when
// one is close.
func UnknownVariables(environ []string) []string {
	known := map[string]bool{}
	var names []string
	for _, s := range Settings() {
		known[s.Env] = true
		names = append(names, s.Env)
	}
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, Prefix) || known[name] {
			continue
		}
		w := fmt.Sprintf("%s is not a setting of focusgate and is ignored", name)
		if near := nearest(name, names); near != "" {
			w += fmt.Sprintf(" (did you mean %s?)", near)
		}
		warnings = append(warnings, w)
	}
	slices.Sort(warnings)
	return warnings
}

// nearest is the name of names closest to name by edit distance, when it
// is close enough to be a misspelling of it: a few edits, fewer than a
// third of its letters.
func nearest(name string, names []string) string {
	best, dist := "", len(name)
	for _, n := range names {
		if d := editDistance(name, n); d < dist {
			best, dist = n, d
		}
	}
	if dist > 3 || dist*3 > len(strings.TrimPrefix(name, Prefix)) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
