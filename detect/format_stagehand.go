package detect

import "strings"

// stagehandFormat is the hybrid accessibility tree Stagehand (3.x) sends with
// act, observe and extract: `[0-2] RootWebArea: Title`, two spaces per level,
// ids `[frame-node]` (`[1-4000] status`), roles that are several words for
// DOM-backed nodes (`[0-31] scrollable, html`), a name after ": " when there
// is one, and ` [selected]`, ` [checked]` flags. Its extract prompt writes the
// first line after a label (`DOM: [0-2] RootWebArea: ...`); that label is kept
// as part of the root line, which pruning never drops. The goal is the
// `instruction:` (observe) or `Instruction:` (extract) line before the tree.
var stagehandFormat = spec{
	name:  Stagehand,
	parse: parseStagehand,
	// An id opens with a digit: `[0-2]`, `[12]`.
	ids:        func(text *screen) bool { return text.brackets(&text.digit) >= MinIDLines },
	accept:     nested,
	labels:     []string{"instruction", "accessibility tree"},
	goalLabels: []string{"instruction"},
	stub: func(line, bid, role string) string {
		// Keep what precedes the id: the indentation, or the label of a root.
		prefix := indentOf(line)
		if i := strings.IndexByte(line, '['); i >= 0 {
			prefix = line[:i]
		}
		return prefix + "[" + bid + "] " + role
	},
	marker:  indentedMarker,
	fixture: "stagehand.txt",
}

// maxRootLabel bounds the label that may precede a Stagehand root line.
const maxRootLabel = 32

// parseStagehand parses one line of a Stagehand tree.
func parseStagehand(s string, p int) (element, bool) {
	e := lineEnd(s, p)
	ce := content(s, p, e)
	el := element{next: e + 1}
	el.Start, el.End = p, e
	depth, width, ok := spaceIndent(s, p, ce)
	if !ok {
		return el, false
	}
	el.Depth = depth
	i := p + width
	if depth == 0 && i < ce && s[i] != '[' {
		label, _, found := strings.Cut(s[i:ce], ": [")
		if !found || len(label) > maxRootLabel || name(label) == 0 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ") != "" {
			return el, false
		}
		i += len(label) + 2
	}
	if i >= ce || s[i] != '[' {
		return el, false
	}
	j := i + 1
	if d := digits(s[j:ce]); d == 0 {
		return el, false
	} else {
		j += d
	}
	if j < ce && s[j] == '-' {
		d := digits(s[j+1 : ce])
		if d == 0 {
			return el, false
		}
		j += 1 + d
	}
	if j+1 >= ce || s[j] != ']' || s[j+1] != ' ' || j-i-1 > maxBIDLen {
		return el, false
	}
	el.BID = s[i+1 : j]
	i = j + 2
	n := name(s[i:ce])
	if n == 0 {
		return el, false
	}
	role := i
	for i += n; strings.HasPrefix(s[i:ce], ", "); i += 2 + n {
		if n = name(s[i+2 : ce]); n == 0 {
			return el, false
		}
	}
	el.Role = s[role:i]
	switch rest := s[i:ce]; {
	case rest == "", rest == ":", strings.HasPrefix(rest, ": "):
	default:
		for rest != "" {
			flag, ok := strings.CutPrefix(rest, " [")
			end := strings.IndexByte(flag, ']')
			if !ok || end <= 0 || name(flag[:end]) != end {
				return el, false
			}
			rest = flag[end+1:]
		}
	}
	el.id, el.counted = true, true
	return el, true
}
