package detect

import (
	"regexp"
	"strings"
)

// cutMarkers are the lines clients leave where they cut the middle out of a
// long output, one entry per client. The marker's line is neither half's:
// it stays as it came, and each half is searched as a text of its own, so a
// page cut in two is pruned as two trees.
var cutMarkers = []string{
	`…\d[\d,]* tokens truncated…`,                                    // Codex, inside the line it joins the two halves into
	`\.\.\. ?\[[\d,.\x{a0}\x{202f}' ]+ characters omitted\] ?\.\.\.`, // Gemini CLI, the count as the user's locale writes it
	`\.\.\.\d[\d,]* (?:bytes|lines) truncated\.\.\.`,                 // opencode, before its footer or after its header
	`\.\.\.output truncated\.\.\.`,                                   // opencode's shell tool
	`\.\.\.\[truncated \d[\d,]* chars\]\.\.\.`,                       // Cline, in the middle of a JSON text it cut
	`\.\.\. \[CONTENT TRUNCATED\] \.\.\.`,                            // Qwen Code, between "---" lines, after a header that names the file holding the whole
}

// cutMarker matches any of cutMarkers. Every marker holds "truncated",
// "omitted" or "TRUNCATED", which peelCuts looks for first.
var cutMarker = regexp.MustCompile(strings.Join(cutMarkers, "|"))

// peelCuts splits s at its cut markers: each piece between two marker lines
// is a view, and the markers are reserved.
func peelCuts(s string) ([]view, []span) {
	if !strings.Contains(s, "truncated") && !strings.Contains(s, "omitted") && !strings.Contains(s, "TRUNCATED") {
		return nil, nil
	}
	marks := cutMarker.FindAllStringIndex(s, -1)
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
	return view{text: s[from:to], from: from, to: to, lift: func(h hit) (hit, bool) { return shifted(h, from, s), true }}
}
