package detect

import (
	"cmp"
	"slices"
	"strings"
)

// Clients rarely hand a page to the model as the browser tool printed it. A
// coding agent saves a large output to a file and reads it back with line
// numbers; an MCP client passes the tool result through JSON.stringify; a
// harness cuts the middle out of a long output and leaves a marker line; a
// file read comes in an envelope and is followed by the harness's own notes.
// Each client combines these differently, so detection does not know clients:
// it knows a few kinds of wrapper (layers) and peels them in any order, as
// deep as they go, around the registered page formats.
//
// A layer sees through one kind of wrapper: it returns the texts inside it
// (views) and, for each, how a tree found there maps back onto the text
// around it. Every mapping is exact, so that the caller can write a pruned
// tree back through the same wrappers: a line number stays with its line
// (focusgate.Line.Gutter), an escaped tree is escaped again as often
// (Observation.Nested), and everything outside the tree — markers, envelopes,
// notes — is never inside a span that gets replaced.
//
// A new client's wrapper is a new entry in layers (with a test in
// layers_test.go), or, for a cut marker, a new entry in cutMarkers.

// layer peels one kind of wrapper off a text.
type layer struct {
	name string
	// peel returns the texts inside s that the layer sees through, and the
	// spans of s that belong to the wrapper itself and must never be pruned
	// (a cut marker). It returns nothing, quickly, when s has no such wrapper.
	peel func(s string) (views []view, reserved []span)
}

// layers are the wrappers detection peels, tried at every level in this
// order: a view that lies inside an earlier layer's view is not searched
// again, so the order only saves work (a numbered read is one view, not one
// per piece of the cut text it holds).
var layers = []layer{
	{name: "gutter", peel: peelGutters},
	{name: "cut", peel: peelCuts},
	{name: "json", peel: peelJSON},
}

// maxLayers bounds how many wrappers are peeled around one tree: real
// clients stack three at most (a numbered read of a JSON file cut by a
// marker), and every level searches its views again.
const maxLayers = 6

// view is a text a layer sees inside another, with the way back.
type view struct {
	text     string
	from, to int // the bytes of the text around it that the view is made of
	// lift maps a tree found in text onto the text the view was peeled
	// from; false when it cannot be put back exactly.
	lift func(h hit) (hit, bool)
}

// hit is a tree found in a text, through zero or more layers.
type hit struct {
	// at is the tree as it lies in the text searched: escaped nested times.
	at    span
	block Block  // the tree, with offsets in text
	text  string // the decoded text that holds the tree; the text searched when nested is 0
	// nested counts the JSON string encodings between the text searched and
	// the tree. When it is 0, block.Start and block.End are at.
	nested int
	peeled int // how many layers were peeled to find it
}

// searchFactor bounds the bytes of the views one search looks into, as a
// multiple of the text's size. Each layer may see nearly the whole text
// again (a numbered read holding a JSON text cut in two), so a text built
// to stack every wrapper six deep would otherwise be searched hundreds of
// times over. Random stacks of up to four of the wrappers in layers_test.go
// around the fixture pages look at 1.5 times their text on average, 9.3 at
// most.
const searchFactor = 16

// findTrees returns the trees of a tool output or message, through any
// stack of wrappers, in text order and never overlapping.
func findTrees(s string) []hit {
	if strings.HasPrefix(strings.TrimSpace(s), "<persisted-output>") {
		// Claude Code's preview of an output it saved to a file: the first
		// kilobytes, which the model reads whole with Read if it needs
		// them. Nothing here to prune.
		return nil
	}
	budget := searchFactor * len(s)
	return search(s, 0, &budget)
}

// search finds the trees of s as it is and inside every view its layers
// see, and keeps the largest of those that overlap. Views are looked into
// while budget, the bytes left to look at, allows.
func search(s string, depth int, budget *int) []hit {
	var hits []hit
	for _, b := range Blocks(s) {
		hits = append(hits, hit{at: span{b.Start, b.End}, block: b, text: s})
	}
	if depth >= maxLayers {
		return hits
	}
	var reserved, searched []span
	for _, l := range layers {
		views, res := l.peel(s)
		reserved = append(reserved, res...)
		n := len(searched)
		for _, v := range views {
			if inside(span{v.from, v.to}, searched[:n]) {
				// An earlier layer's view holds it, and that view is
				// searched with every layer: a piece of a cut text
				// holds the same JSON strings, a numbered read the
				// same strings without the numbers.
				continue
			}
			if len(v.text) > *budget {
				continue
			}
			searched = append(searched, span{v.from, v.to})
			*budget -= len(v.text)
			for _, h := range search(v.text, depth+1, budget) {
				if up, ok := v.lift(h); ok {
					up.peeled++
					hits = append(hits, up)
				}
			}
		}
	}
	if len(reserved) > 0 {
		hits = slices.DeleteFunc(hits, func(h hit) bool { return touches(s, h, reserved) })
	}
	return disjoint(hits)
}

// touches says whether h would prune part of a reserved span of s. A tree
// at this level must not share a line with it (Codex joins the two halves
// of a cut into the marker's line); a tree inside an escaped string only
// must not hold its bytes, since the whole string may be that line.
func touches(s string, h hit, reserved []span) bool {
	if h.nested == 0 {
		reserved = markerLines(s, reserved)
	}
	return overlaps(h.at, reserved)
}

// markerLines returns the lines of s that hold the spans.
func markerLines(s string, spans []span) []span {
	lines := make([]span, len(spans))
	for i, r := range spans {
		lines[i] = span{strings.LastIndexByte(s[:r.start], '\n') + 1, lineEnd(s, r.end)}
	}
	return lines
}

// inside says whether x lies within one of spans.
func inside(x span, spans []span) bool {
	return slices.ContainsFunc(spans, func(r span) bool { return r.start <= x.start && x.end <= r.end })
}

// overlaps says whether x shares a byte with one of spans.
func overlaps(x span, spans []span) bool {
	return slices.ContainsFunc(spans, func(r span) bool { return x.start < r.end && r.start < x.end })
}

// disjoint keeps, of hits that overlap, the one with the most lines (then
// the one peeled the least, then the first), and returns them in text order.
// The same tree is often found twice, through different stacks of layers.
func disjoint(hits []hit) []hit {
	if len(hits) < 2 {
		return hits
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		return cmp.Or(len(b.block.Lines)-len(a.block.Lines), a.peeled-b.peeled, a.at.start-b.at.start)
	})
	kept := hits[:0:0]
	for _, h := range hits {
		if !slices.ContainsFunc(kept, func(k hit) bool { return h.at.start < k.at.end && k.at.start < h.at.end }) {
			kept = append(kept, h)
		}
	}
	slices.SortFunc(kept, func(a, b hit) int { return a.at.start - b.at.start })
	return kept
}

// shifted is h, found in a view that starts at byte off of outer, in
// outer's offsets.
func shifted(h hit, off int, outer string) hit {
	h.at.start += off
	h.at.end += off
	if h.nested == 0 {
		h.block.Start += off
		h.block.End += off
		h.text = outer
	}
	return h
}
