package prune

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/focusgate/focusgate"
)

// NewTree builds a Tree from detection's lines.
func NewTree(text string, format Syntax, lines []focusgate.Line, focusedBID string) Tree {
	return Tree{Text: text, Format: format, Lines: lines, FocusedBID: focusedBID}
}

// Syntax writes the lines that stand for pruned elements in a page format's
// own syntax. detect.Format implements it: a format's stub and marker syntax
// lives in package detect next to its grammar, one unit per format, and prune
// asks through this interface instead of switching on format names. prune does
// not import detect: the two stay independent leaves that the pipeline and
// eval bring together, and a caller may prune a tree that detect never saw
// with a Syntax of its own.
type Syntax interface {
	// Stub returns the stand-in of an element: line is the element's text in
	// the tree (indentation included), bid and role what detection read.
	Stub(line, bid, role string) string
	// Marker returns a line that carries note ("... 3 lines pruned ..."),
	// placed like line, the first line it replaces.
	Marker(line, note string) string
}

// Tree is one observation ready for pruning.
type Tree struct {
	Text string
	// Format writes stubs and markers in the tree's own syntax; it is
	// required (a detect.Format).
	Format     Syntax
	Lines      []focusgate.Line
	FocusedBID string
	// Known, when set, is what is known of Text (detect.Observation.Known):
	// its count, its hash and its soundness are taken from it and recorded
	// in it instead of being worked out again.
	Known *focusgate.Known
}

// Selection is what the retriever chose. It is what gets cached, never the
// pruned text, so that the mode can change without asking again.
type Selection struct {
	Ranges []focusgate.Range `json:"ranges"`
	// Flagged lists the line numbers the defender prompt reported as
	// attempts to instruct the agent.
	Flagged []int                    `json:"flagged,omitempty"`
	Usage   focusgate.RetrieverUsage `json:"usage"`
	// Reasoning is what the retriever wrote before its answer. It is not
	// cached: it may quote the page, and only the request that asked for it
	// reports it (to the dashboard, when page text is captured).
	Reasoning string `json:"-"`
}

// Number renders the tree as the retriever sees it: each line gets its
// number right-aligned in four columns, then one space, then the line with
// its own indentation. Continuation lines of an element get no number of
// their own, only the same five columns of padding. Lines must be valid
// (Apply reports when they are not); Pruner checks before numbering.
func Number(t Tree) string {
	var b strings.Builder
	b.Grow(len(t.Text) + 6*len(t.Lines))
	var buf [20]byte
	for i, l := range t.Lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		num := strconv.AppendInt(buf[:0], int64(i+1), 10)
		for range 4 - len(num) {
			b.WriteByte(' ')
		}
		b.Write(num)
		b.WriteByte(' ')
		first, rest, more := strings.Cut(t.Text[l.Start:l.End], "\n")
		b.WriteString(first)
		for more {
			first, rest, more = strings.Cut(rest, "\n")
			b.WriteString("\n     ")
			b.WriteString(first)
		}
	}
	return b.String()
}

// validate reports line offsets that Number and Apply cannot work with: out
// of the text, reversed, or not in text order.
func validate(t Tree) error {
	if len(t.Lines) == 0 {
		return fmt.Errorf("prune: tree has no lines")
	}
	if t.Format == nil {
		return fmt.Errorf("prune: tree has no format")
	}
	prevEnd := -1
	for i, l := range t.Lines {
		if l.Start < 0 || l.End < l.Start || l.End > len(t.Text) {
			return fmt.Errorf("prune: line %d spans [%d,%d) outside a text of %d bytes", i+1, l.Start, l.End, len(t.Text))
		}
		if l.Start <= prevEnd {
			return fmt.Errorf("prune: line %d starts at %d, before the end of line %d", i+1, l.Start, i)
		}
		prevEnd = l.End
	}
	return nil
}
