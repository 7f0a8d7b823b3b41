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

// numberedRead says whether s is a numbered file read: at least minLines
// lines, nearly all of them numbered.
func numberedRead(s string, minLines int) bool {
	if strings.Count(s, "\n")+1 < minLines || gutterLen(s) == 0 {
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
	return numbered >= minLines && numbered*10 >= lines*9
}

// numbers is a numbered read with its line numbers set aside: plain is the
// text without them; line k starts at starts[k] in the read and at plains[k]
// in plain, after a number of gutters[k] bytes.
type numbers struct {
	plain                   string
	starts, plains, gutters []int
}

func stripNumbers(s string) numbers {
	var n numbers
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
		n.starts, n.plains, n.gutters = append(n.starts, at), append(n.plains, plain.Len()), append(n.gutters, g)
		plain.WriteString(s[at+g : end])
		if end < len(s) {
			plain.WriteByte('\n')
		}
		at = end + 1
	}
	n.plain = plain.String()
	return n
}

// line is the line that plain offset p falls on.
func (n numbers) line(p int) int { return sort.SearchInts(n.plains, p+1) - 1 }

// toRead maps a plain offset to the read.
func (n numbers) toRead(p int) int {
	k := n.line(p)
	return p - n.plains[k] + n.starts[k] + n.gutters[k]
}

// numberedBlocks finds the trees of a numbered read: it searches the read
// with its line numbers removed and maps what it finds back onto s, each
// line starting at its number.
func numberedBlocks(s string) []Block {
	n := stripNumbers(s)
	blocks := Blocks(n.plain)
	for bi := range blocks {
		b := &blocks[bi]
		start := n.starts[n.line(b.Start)] // the first line's number belongs to the tree
		lines := make([]focusgate.Line, len(b.Lines))
		for i, l := range b.Lines {
			k := n.line(b.Start + l.Start)
			l.Start, l.End, l.Gutter = n.starts[k]-start, n.toRead(b.Start+l.End)-start, n.gutters[k]
			lines[i] = l
		}
		b.Start, b.End, b.Lines = start, n.toRead(b.End), lines
	}
	return blocks
}

// findInner is innerTrees for a string that may be a numbered read of a JSON
// file: Claude Code saves a large MCP result of several parts as JSON, so the
// page comes back from Read on one numbered line, escaped. A JSON string never
// spans lines, so each inner string keeps its place on its line.
func findInner(s string) []inner {
	if !numberedRead(s, 2) {
		return innerTrees(s)
	}
	n := stripNumbers(s)
	found := innerTrees(n.plain)
	for i := range found {
		in := &found[i]
		in.lit = span{n.toRead(in.lit.start), n.toRead(in.lit.end)}
		in.raw = span{n.toRead(in.raw.start), n.toRead(in.raw.end)}
	}
	return found
}

// truncated is the marker an agent puts where it cut the middle of a long
// tool output: Codex's "…4210 tokens truncated…", inside a line that it
// joins from the two halves, and Gemini CLI's "... [32,000 characters
// omitted] ..." (the count as the user's locale writes it), on a line of
// its own between the head and the tail, each of which may end or start
// in the middle of a line.
var truncated = regexp.MustCompile(`…\d+ tokens truncated…|\.\.\. \[[\d,.\x{a0}\x{202f}' ]+ characters omitted\] \.\.\.`)

// findBlocks is Blocks for a string that may be a numbered file read, or a
// tool output that Codex or Gemini CLI cut in the middle: the line holding
// the cut is neither half's, so each half is searched on its own and the
// marker line is never pruned.
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
	if numberedRead(s, MinLines) {
		return numberedBlocks(s)
	}
	return Blocks(s)
}
