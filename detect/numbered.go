package detect

import (
	"regexp"
	"sort"
	"strings"

	"github.com/focusgate/focusgate"
)

// A coding agent often sees a page through a file read: Claude Code saves a
// large tool output to a file and reads it back with its Read tool, which
// puts a line number and a tab before each line ("12\t- button ..."); cat -n
// right-aligns the number ("    12\t"), and older Read versions wrote an
// arrow ("    12→"). Such a read is searched with the numbers set aside; a
// tree found in it keeps each line's number as the line's gutter
// (focusgate.Line.Gutter), so that the lines kept are written back with their
// own numbers and the model can still cite them. Each read (each chunk of a
// file) is an observation of its own.

// gutterLen is the length of the line number at the start of line: spaces,
// digits, then a tab or an arrow. Zero when the line has none.
func gutterLen(line string) int {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	digits := i
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	switch {
	case i == digits || i-digits > 9:
		return 0
	case i < len(line) && line[i] == '\t':
		return i + 1
	case strings.HasPrefix(line[i:], "→"):
		return i + len("→")
	}
	return 0
}

// numberedRead says whether s is a numbered file read: at least MinLines
// lines, nearly all of them numbered.
func numberedRead(s string) bool {
	if strings.Count(s, "\n")+1 < MinLines || gutterLen(s) == 0 {
		return false
	}
	lines, numbered := 0, 0
	for line := range strings.SplitSeq(s, "\n") {
		if line == "" {
			continue
		}
		lines++
		if gutterLen(line) > 0 {
			numbered++
		}
	}
	return numbered >= MinLines && numbered*10 >= lines*9
}

// numberedBlocks finds the trees of a numbered read: it searches the read
// with its line numbers removed and maps what it finds back onto s, each
// line starting at its number.
func numberedBlocks(s string) []Block {
	// starts[k] and plains[k]: where line k starts in s and in the text
	// without numbers; gutters[k]: the length of its number.
	var starts, plains, gutters []int
	var plain strings.Builder
	plain.Grow(len(s))
	for at := 0; at <= len(s); {
		end := strings.IndexByte(s[at:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += at
		}
		g := gutterLen(s[at:end])
		starts, plains, gutters = append(starts, at), append(plains, plain.Len()), append(gutters, g)
		plain.WriteString(s[at+g : end])
		if end < len(s) {
			plain.WriteByte('\n')
		}
		at = end + 1
	}
	// lineOf is the line of s that plain offset p falls on.
	lineOf := func(p int) int { return sort.SearchInts(plains, p+1) - 1 }
	toS := func(p int) int {
		k := lineOf(p)
		return p - plains[k] + starts[k] + gutters[k]
	}
	blocks := Blocks(plain.String())
	for bi := range blocks {
		b := &blocks[bi]
		first := lineOf(b.Start)
		start := starts[first] // the first line's number belongs to the tree
		lines := make([]focusgate.Line, len(b.Lines))
		for i, l := range b.Lines {
			k := lineOf(b.Start + l.Start)
			l.Start, l.End, l.Gutter = starts[k]-start, toS(b.Start+l.End)-start, gutters[k]
			lines[i] = l
		}
		b.Start, b.End, b.Lines = start, toS(b.End), lines
	}
	return blocks
}

// truncated is the marker Codex puts where it cut the middle of a long
// command output ("…4210 tokens truncated…"), inside a line that it joins
// from the two halves.
var truncated = regexp.MustCompile(`…\d+ tokens truncated…`)

// findBlocks is Blocks for a string that may be a numbered file read, or a
// command output that Codex cut in the middle: the line holding the cut is
// neither half's, so each half is searched on its own and the marker line
// is never pruned.
func findBlocks(s string) []Block {
	if strings.HasPrefix(strings.TrimSpace(s), "<persisted-output>") {
		// Claude Code's preview of an output it saved to a file: the first
		// kilobytes, which the model reads whole with Read if it needs
		// them. Nothing here to prune.
		return nil
	}
	if m := truncated.FindStringIndex(s); m != nil {
		lineStart := strings.LastIndexByte(s[:m[0]], '\n') + 1
		lineEnd := len(s)
		if i := strings.IndexByte(s[m[1]:], '\n'); i >= 0 {
			lineEnd = m[1] + i
		}
		blocks := findBlocks(s[:lineStart])
		for _, b := range findBlocks(s[lineEnd:]) {
			b.Start, b.End = b.Start+lineEnd, b.End+lineEnd
			blocks = append(blocks, b)
		}
		return blocks
	}
	if numberedRead(s) {
		return numberedBlocks(s)
	}
	return Blocks(s)
}
