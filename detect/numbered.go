package detect

import (
	"regexp"
	"strings"
)

// A coding agent often sees a page through a file read: Claude Code saves a
// large tool output to a file and reads it back with its Read tool, which
// puts a line number and a tab before each line ("12\t- button ..."); cat -n
// right-aligns the number ("    12\t"), older Read versions wrote an arrow
// ("    12→"), opencode writes "12: " after a <path>…</path><type>file</type>
// <content> envelope, and its older versions "00012| ". The gutter layer
// sees through every run of lines numbered one after the other: the run
// with its numbers set aside is a view. A tree found in it is the tree
// without numbers, as the retriever sees it, and each line's number stays in
// the line's place (wrapGutters), so that the lines kept and their stubs are
// written back with their own numbers and the model can still cite them; the
// envelope, and the text after the run (Claude Code's
// <system-reminder>, opencode's "(End of file …)"), stay outside the tree.

// gutterSeps are what follows a line number in a file read.
var gutterSeps = []string{"\t", "→", ": ", "| "}

// envelope is what a file read may put before its first numbered line on
// the same line: tags, each closed or opening the content.
var envelope = regexp.MustCompile(`^(?:<[A-Za-z][\w-]*>[^<\n]*</[A-Za-z][\w-]*>)*<[A-Za-z][\w-]*>`)

// gutter reads the line number at the start of line: its value, the length
// of the gutter and which of gutterSeps ends it. The length is 0 when the
// line has none.
func gutter(line string) (num, length, sep int) {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	digits := i
	for i < len(line) && isDigit(line[i]) {
		num = num*10 + int(line[i]-'0')
		i++
	}
	if i == digits || i-digits > 9 {
		return 0, 0, -1
	}
	for k, s := range gutterSeps {
		switch {
		case strings.HasPrefix(line[i:], s):
			return num, i + len(s), k
		case len(s) == 2 && s[1] == ' ' && line[i:] == s[:1]:
			// An empty line whose trailing space was trimmed: "12:".
			return num, i + 1, k
		}
	}
	return 0, 0, -1
}

// gutterLen is the length of the line number at the start of line, 0 when
// there is none.
func gutterLen(line string) int {
	_, n, _ := gutter(line)
	return n
}

// numbers is a run of numbered lines with their numbers set aside: plain is
// the run without them; line k starts at starts[k] in the text around the
// run and at plains[k] in plain, after a number of gutters[k] bytes.
type numbers struct {
	plain                   string
	starts, plains, gutters []int
}

// toRead maps plain offset p, on line k, to the text around the run.
func (n *numbers) toRead(p, k int) int {
	return p - n.plains[k] + n.starts[k] + n.gutters[k]
}

// peelGutters returns a view of every run of numbered lines of s that can
// hold a tree: enough lines, or a line holding an escaped text.
func peelGutters(s string) ([]view, []span) {
	var views []view
	for at := 0; at < len(s); {
		// Most lines of most texts start with neither a number nor an
		// envelope, and are passed over at a glance.
		first := at
		for first < len(s) && s[first] == ' ' {
			first++
		}
		if first == len(s) || s[first] != '<' && !isDigit(s[first]) || s[first] == '<' && first > at {
			at = lineEnd(s, first) + 1
			continue
		}
		e := lineEnd(s, at)
		off := 0
		if s[at] == '<' {
			if m := envelope.FindStringIndex(s[at:e]); m != nil {
				off = m[1]
			}
		}
		num, g, sep := gutter(s[at+off : e])
		if g == 0 {
			at = e + 1
			continue
		}
		n := &numbers{}
		var plain strings.Builder
		p := at + off
		for {
			n.starts, n.plains, n.gutters = append(n.starts, p), append(n.plains, plain.Len()), append(n.gutters, g)
			plain.WriteString(s[p+g : e])
			if e >= len(s) {
				break
			}
			next, ne := e+1, lineEnd(s, e+1)
			k, ng, nsep := gutter(s[next:ne])
			if ng == 0 || nsep != sep || k != num+1 {
				break
			}
			plain.WriteByte('\n')
			p, e, g, num = next, ne, ng, k
		}
		if len(n.starts) >= MinLines || strings.Count(s[at:e], `\n`) >= MinLines-1 {
			n.plain = plain.String()
			views = append(views, view{text: n.plain, from: at + off, to: e, numbers: n})
		}
		at = e + 1
	}
	return views, nil
}

// wrapGutters places the trees found in a run's plain text in s, the text
// around the run. Each line of a tree starts at its number, which precedes
// its element's own text: kept lines and stubs go back with their numbers,
// a marker (which stands for lines, not one of them) with none. A tree that
// starts after an envelope on its first line leaves that line's number
// outside; a tree in an escaped string keeps its place on its one line.
func wrapGutters(_ string, v view, hits []hit) []hit {
	n := v.numbers
	k := 0 // the line of the offset placed last; offsets come in order
	line := func(p int) int {
		for k+1 < len(n.plains) && n.plains[k+1] <= p {
			k++
		}
		return k
	}
	kept := hits[:0]
	for _, h := range hits {
		ok, top := true, line(h.places[0].start)
		for i := range h.places {
			p := &h.places[i]
			first := line(p.start)
			switch {
			case h.nested == 0 && n.plains[first] == p.start:
				p.start = n.starts[first]
			case h.nested == 0 && i > 0:
				// Only a tree's first line may start inside a
				// numbered line.
				ok = false
			default:
				p.start = n.toRead(p.start, first)
			}
			p.own = n.toRead(p.own, line(p.own))
			last := line(p.end)
			if h.nested > 0 && last != top {
				ok = false // an escaped string lies on one line
			}
			p.end = n.toRead(p.end, last)
		}
		if ok {
			kept = append(kept, h)
		}
	}
	return kept
}
