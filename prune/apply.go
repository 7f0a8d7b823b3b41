package prune

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/focusgate/focusgate"
)

// action is what happens to one line of the tree.
type action uint8

const (
	drop action = iota
	keep
	stub
)

// Apply writes the tree back with only the selected lines, as mode says:
//
//   - Remove keeps the selected lines verbatim and replaces each run of
//     other lines by one marker line, indented like the first line it
//     replaces, that says how many lines were pruned.
//   - Ancestors does the same, and keeps every ancestor of a kept line as a
//     stub (indentation, bid and role), so that kept elements sit in their
//     real place in the hierarchy.
//   - Stubs writes every other line as a stub with a pruned mark, so the
//     output has exactly one line per element.
//   - Off returns the text unchanged.
//
// The root line (the first) and the focused element's line are always kept,
// whatever the selection. Flagged lines are always removed, even in Stubs
// mode (they become a bare marker), even as ancestors and even when focused;
// a flagged root is kept as a stub. Text before the first line and after the last is
// copied unchanged, so a tree without a trailing newline gets none.
func Apply(t Tree, sel Selection, mode focusgate.Mode) (string, error) {
	if err := validate(t); err != nil {
		return "", err
	}
	a, err := apply(t, sel, mode)
	return a.text, err
}

// applied is what apply makes of a tree.
type applied struct {
	text string
	// pieces are the runs of lines text is made of, for writing the tree
	// back through the page's wrappers; nil in ModeOff.
	pieces []focusgate.Piece
	// flagged is how many flagged lines were removed, and kept the lines
	// kept verbatim (selected, root and focus, less the flagged ones), as
	// sorted disjoint ranges, so that a report can show what was kept.
	flagged int
	kept    []focusgate.Range
}

// apply is Apply on a tree validate accepted, that also says how the result
// is made of the tree's lines and what was kept and removed.
func apply(t Tree, sel Selection, mode focusgate.Mode) (applied, error) {
	switch mode {
	case focusgate.ModeRemove, focusgate.ModeAncestors, focusgate.ModeStubs:
	case focusgate.ModeOff:
		return applied{text: t.Text, kept: []focusgate.Range{{From: 1, To: len(t.Lines)}}}, nil
	default:
		return applied{}, fmt.Errorf("prune: unknown mode %q", mode)
	}
	n := len(t.Lines)
	acts := make([]action, n)
	for _, r := range normalize(sel.Ranges, n) {
		for i := r.From - 1; i < r.To; i++ {
			acts[i] = keep
		}
	}
	var flagged []bool
	if len(sel.Flagged) > 0 {
		flagged = make([]bool, n)
		for _, f := range sel.Flagged {
			if f >= 1 && f <= n {
				flagged[f-1] = true
				acts[f-1] = drop
			}
		}
	}
	// The agent needs the root to know where it is and the focused element
	// to know where its input goes, but never the text of an injection:
	// focus is easily stolen by a pop-up, and a flagged root keeps only its
	// role.
	acts[0] = keep
	if flagged != nil && flagged[0] {
		acts[0] = stub
	}
	if t.FocusedBID != "" {
		for i, l := range t.Lines {
			if l.BID == t.FocusedBID && (flagged == nil || !flagged[i]) {
				acts[i] = keep
			}
		}
	}
	removed := 0
	for i, f := range flagged {
		if f && acts[i] != keep {
			removed++
		}
	}
	if mode == focusgate.ModeAncestors {
		stubAncestors(t.Lines, acts, flagged)
	}
	text, pieces := render(t, acts, flagged, mode)
	return applied{text: text, pieces: pieces, flagged: removed, kept: keptRanges(acts)}, nil
}

// keptRanges lists the runs of kept lines, numbered from 1.
func keptRanges(acts []action) []focusgate.Range {
	var kept []focusgate.Range
	for i, a := range acts {
		switch {
		case a != keep:
		case len(kept) > 0 && kept[len(kept)-1].To == i:
			kept[len(kept)-1].To = i + 1
		default:
			kept = append(kept, focusgate.Range{From: i + 1, To: i + 1})
		}
	}
	return kept
}

// stubAncestors marks as stubs the dropped ancestors of every kept line. The
// parent of a line is the nearest earlier line with a smaller depth.
func stubAncestors(lines []focusgate.Line, acts []action, flagged []bool) {
	parent := make([]int, len(lines))
	var open []int // the chain of possible parents, depths increasing
	for i, l := range lines {
		for len(open) > 0 && lines[open[len(open)-1]].Depth >= l.Depth {
			open = open[:len(open)-1]
		}
		parent[i] = -1
		if len(open) > 0 {
			parent[i] = open[len(open)-1]
		}
		open = append(open, i)
	}
	for i, a := range acts {
		if a != keep {
			continue
		}
		// A kept or stubbed ancestor has had its own ancestors handled.
		for p := parent[i]; p >= 0 && acts[p] == drop; p = parent[p] {
			if flagged == nil || !flagged[p] {
				acts[p] = stub
			}
		}
	}
}

// relookHint tells the action model, once per page in stubs mode, how to see
// what the stubs stand for: the gateway sends a page whole when the agent
// takes a new snapshot of the same page right after a pruned one.
const relookHint = "take a new snapshot to see the whole page"

// render writes the tree as acts say, and the pieces the result is made of:
// runs of kept lines, stubs and markers, each stub and marker's text a part
// of the result itself.
func render(t Tree, acts []action, flagged []bool, mode focusgate.Mode) (string, []focusgate.Piece) {
	var b strings.Builder
	b.Grow(renderedSize(t, acts) + len(relookHint))
	pieces := make([]focusgate.Piece, 0, countPieces(acts, mode))
	b.WriteString(t.Text[:t.Lines[0].Start])
	// In stubs mode the first line that stands for hidden ones carries the
	// hint; the others only say that they were pruned.
	hinted := mode != focusgate.ModeStubs
	suffix := func() string {
		if hinted {
			return " (pruned)"
		}
		hinted = true
		return " (pruned: " + relookHint + ")"
	}
	note := func() string {
		if hinted {
			return markerNote(1)
		}
		hinted = true
		return "... 1 line pruned: " + relookHint + " ..."
	}
	// written ends a piece of new text that starts at from: the text is the
	// builder's own bytes, which later writes never change.
	written := func(kind focusgate.PieceKind, i, j, from int) {
		pieces = append(pieces, focusgate.Piece{Kind: kind, From: i, To: j, Text: b.String()[from:]})
	}
	for i := 0; i < len(t.Lines); {
		l := t.Lines[i]
		line, from := t.Text[l.Start:l.End], b.Len()
		switch {
		case acts[i] == keep:
			// A run of kept lines is the tree's text from its first to
			// its last, what separates them included.
			j := i + 1
			for j < len(t.Lines) && acts[j] == keep {
				j++
			}
			b.WriteString(t.Text[l.Start:t.Lines[j-1].End])
			pieces = append(pieces, focusgate.Piece{Kind: focusgate.PieceKept, From: i, To: j})
			i = j
		case acts[i] == stub:
			writeStub(&b, t.Format, line, l, "")
			written(focusgate.PieceStub, i, i+1, from)
			i++
		case mode == focusgate.ModeStubs && (flagged == nil || !flagged[i]) && (l.BID != "" || l.Role != ""):
			writeStub(&b, t.Format, line, l, suffix())
			written(focusgate.PieceStub, i, i+1, from)
			i++
		case mode == focusgate.ModeStubs:
			b.WriteString(t.Format.Marker(line, note()))
			written(focusgate.PieceMarker, i, i+1, from)
			i++
		default:
			j := i + 1
			for j < len(t.Lines) && acts[j] == drop {
				j++
			}
			b.WriteString(t.Format.Marker(line, markerNote(j-i)))
			written(focusgate.PieceMarker, i, j, from)
			i = j
		}
		// What separates the last line written from the next one (usually
		// "\n"), or what follows the tree.
		if i < len(t.Lines) {
			b.WriteString(t.Text[t.Lines[i-1].End:t.Lines[i].Start])
		} else {
			b.WriteString(t.Text[t.Lines[i-1].End:])
		}
	}
	return b.String(), pieces
}

// countPieces is how many pieces render makes: one per run of kept lines,
// per stub, and per marker (in stubs mode one per line it drops, otherwise
// one per run).
func countPieces(acts []action, mode focusgate.Mode) int {
	n := 0
	for i, a := range acts {
		if a == stub || a == drop && mode == focusgate.ModeStubs || i == 0 || acts[i-1] != a {
			n++
		}
	}
	return n
}

// renderedSize estimates what render writes: the text around and between the
// lines, every kept line, and a short allowance for each stub or marker.
// Growing by the whole tree would allocate the page again for a result that
// is usually a fraction of it; an estimate that falls short only costs the
// builder one more growth.
func renderedSize(t Tree, acts []action) int {
	const perLine = 24
	n := len(t.Text) - (t.Lines[len(t.Lines)-1].End - t.Lines[0].Start)
	for i, l := range t.Lines {
		if i > 0 {
			n += l.Start - t.Lines[i-1].End
		}
		if acts[i] == keep {
			n += l.End - l.Start
		} else {
			n += perLine
		}
	}
	return n
}

// writeStub writes the stub of line in the tree's syntax, then suffix. A
// line with neither bid nor role has nothing to stand for it, so it becomes
// a marker.
func writeStub(b *strings.Builder, syntax Syntax, line string, l focusgate.Line, suffix string) {
	if l.BID == "" && l.Role == "" {
		b.WriteString(syntax.Marker(line, markerNote(1)))
		return
	}
	b.WriteString(syntax.Stub(line, l.BID, l.Role))
	b.WriteString(suffix)
}

// markerNote is what a marker line says about the n lines it stands for.
func markerNote(n int) string {
	if n < len(markerNotes) {
		return markerNotes[n]
	}
	return writeMarkerNote(n)
}

// markerNotes are the notes of the short runs, most of a page's markers,
// written once.
var markerNotes = func() (notes [128]string) {
	for n := 1; n < len(notes); n++ {
		notes[n] = writeMarkerNote(n)
	}
	return notes
}()

func writeMarkerNote(n int) string {
	if n == 1 {
		return "... 1 line pruned ..."
	}
	return "... " + strconv.Itoa(n) + " lines pruned ..."
}
