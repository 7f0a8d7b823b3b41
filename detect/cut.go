package detect

import (
	"regexp"
	"slices"
	"strings"
)

// cutMarkers are the lines clients leave where they cut the middle out of a
// long output, one entry per client. The marker's line is neither half's:
// it stays as it came, and each half is searched as a text of its own, so a
// page cut in two is pruned as two trees. Markers are looked for only where
// one of cutStarts is followed by a byte of cutNext: a new client's marker
// that starts otherwise extends those too (TestCutMarkers holds a sample of
// each).
var cutMarkers = []string{
	`…\d[\d,]* tokens truncated…`,                                    // Codex, inside the line it joins the two halves into
	`\.\.\. ?\[[\d,.\x{a0}\x{202f}' ]+ characters omitted\] ?\.\.\.`, // Gemini CLI, the count as the user's locale writes it
	`\.\.\.\d[\d,]* (?:bytes|lines) truncated\.\.\.`,                 // opencode, before its footer or after its header
	`\.\.\.output truncated\.\.\.`,                                   // opencode's shell tool
	`\.\.\.\[truncated \d[\d,]* chars\]\.\.\.`,                       // Cline, in the middle of a JSON text it cut
	`\.\.\. \[CONTENT TRUNCATED\] \.\.\.`,                            // Qwen Code, between "---" lines, after a header that names the file holding the whole
}

// cutMarker matches any of cutMarkers.
var cutMarker = regexp.MustCompile(strings.Join(cutMarkers, "|"))

// cutStarts are what every cut marker starts with. The regular expression
// runs only where one of them is: run over a whole page it would cost more
// than finding the page, and dots in a row are rare in a page.
var cutStarts = []string{"...", "…"}

// cutNext are the bytes that follow a marker's start in one of cutMarkers.
const cutNext = " [0123456789o"

// cutReach bounds the length of a marker.
const cutReach = 96

// findCutMarkers returns the spans of the cut markers in s, in order.
func findCutMarkers(s string) [][]int {
	var marks [][]int
	for _, start := range cutStarts {
		for at := 0; ; {
			k := strings.Index(s[at:], start)
			if k < 0 {
				break
			}
			k += at
			at = k + 1
			if n := k + len(start); n >= len(s) || !strings.ContainsRune(cutNext, rune(s[n])) {
				continue
			}
			if m := cutMarker.FindStringIndex(s[k:min(k+cutReach, lineEnd(s, k))]); m != nil && m[0] == 0 {
				marks = append(marks, []int{k, k + m[1]})
				at = k + m[1]
			}
		}
	}
	slices.SortFunc(marks, func(a, b []int) int { return a[0] - b[0] })
	return marks
}

// peelCuts splits s at its cut markers: each piece between two marker lines
// is a view, and the markers are reserved.
func peelCuts(s string) ([]view, []span) {
	marks := findCutMarkers(s)
	if marks == nil {
		return nil, nil
	}
	var views []view
	reserved := make([]span, len(marks))
	from := 0
	for i, m := range marks {
		reserved[i] = span{m[0], m[1]}
		lineStart := strings.LastIndexByte(s[:m[0]], '\n') + 1
		if lineStart > from {
			views = append(views, piece(s, from, lineStart))
		}
		from = max(from, min(lineEnd(s, m[1])+1, len(s)))
	}
	if from < len(s) {
		views = append(views, piece(s, from, len(s)))
	}
	return views, reserved
}

// piece is the view of s[from:to].
func piece(s string, from, to int) view {
	return view{text: s[from:to], from: from, to: to}
}
