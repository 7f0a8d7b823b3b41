package detect

import (
	"cmp"
	"slices"
	"sort"
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
// A layer declares both directions side by side. Its peel returns the texts
// inside a wrapper (views); its wrap puts the trees found in a view back in
// the text around it: where each line of a tree lies there, as the wrapper
// wrote it (its place), and how the wrapper encodes text written in its
// place. Pruning writes a tree back from those alone (see appendWritten):
// kept lines are the wrapped bytes as they came, so every line a client sent
// goes back byte for byte whatever its wrappers did to it, a stub keeps what
// precedes its element on its line (the gutter layer's line number), and new
// text is escaped once for every JSON layer and once for the body's string.
// Everything outside a tree (markers, envelopes, notes) is never inside a
// span that gets replaced.
//
// A new client's wrapper is a new entry in layers (with a test in
// layers_test.go), or, for a cut marker, a new entry in cutMarkers.

// layer sees through one kind of wrapper.
type layer struct {
	name string
	// peel returns the texts inside s that the layer sees through, and the
	// spans of s that belong to the wrapper itself and must never be pruned
	// (a cut marker). It returns nothing, quickly, when s has no such wrapper.
	peel func(s string) (views []view, reserved []span)
	// wrap is peel's inverse for the trees found in one of its views of s,
	// in text order: it places their lines in s, in one pass over the view,
	// and drops a tree it cannot put back exactly.
	wrap func(s string, v view, hits []hit) []hit
	// cuts says the wrapper shows the model only part of an output and
	// tells it that there is more (a cut marker), which the agent may then
	// read on (see Observation.Cut).
	cuts bool
}

// layers are the wrappers detection peels, tried at every level in this
// order: a view that lies inside an earlier layer's view is not searched
// again, so the order only saves work (a numbered read is one view, not one
// per piece of the cut text it holds).
var layers = []layer{
	{name: "gutter", peel: peelGutters, wrap: wrapGutters},
	{name: "cut", peel: peelCuts, wrap: wrapCut, cuts: true},
	{name: "json", peel: peelJSON, wrap: wrapJSON},
}

// maxLayers bounds how many wrappers are peeled around one tree: real
// clients stack three at most (a numbered read of a JSON file cut by a
// marker), and every level searches its views again.
const maxLayers = 6

// view is a text a layer sees inside another.
type view struct {
	text     string
	from, to int      // the bytes of the text around it that the view is made of
	numbers  *numbers // the gutter layer's: where the numbers of the view's lines were
}

// place is where one line of a tree lies in a text that holds the tree,
// wrapped as that text wraps it: from start, where the line begins (a file
// read's line number included), to end, and own, where the element's own
// text begins. Kept lines are written back as those bytes; a stub keeps
// what lies before own.
type place struct{ start, own, end int }

// hit is a tree found in a text, through zero or more layers.
type hit struct {
	block  Block   // the tree, with offsets in text
	text   string  // the innermost text that holds the tree, every wrapper peeled
	places []place // each line of block in the text searched
	// nested counts the JSON string encodings between the text searched and
	// text: new text written in the tree's place is escaped that many times.
	nested int
	peeled int  // how many layers were peeled to find it
	cut    bool // it lies in a text that a client cut (see layer.cuts)
}

// at is the tree as it lies in the text searched, wrapped.
func (h *hit) at() span {
	return span{h.places[0].start, h.places[len(h.places)-1].end}
}

// surface returns the trees of s as they lie in it, each line in its own
// place.
func surface(s string) []hit {
	blocks := Blocks(s)
	if len(blocks) == 0 {
		return nil
	}
	hits := make([]hit, len(blocks))
	for i, b := range blocks {
		places := make([]place, len(b.Lines))
		for k, l := range b.Lines {
			places[k] = place{b.Start + l.Start, b.Start + l.Start, b.Start + l.End}
		}
		hits[i] = hit{block: b, text: s, places: places}
	}
	return hits
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
// stack of wrappers, in text order and never overlapping. reserve, when
// set, is asked for the memory of each layer's views before they are
// searched; once it refuses, the search stops and findTrees returns false.
func findTrees(s string, reserve func(n int64) bool) ([]hit, bool) {
	if strings.HasPrefix(strings.TrimSpace(s), "<persisted-output>") {
		// Claude Code's preview of an output it saved to a file: the first
		// kilobytes, which the model reads whole with Read if it needs
		// them. Nothing here to prune.
		return nil, true
	}
	sr := searcher{budget: searchFactor * len(s), reserve: reserve}
	hits := sr.search(s, 0)
	return hits, !sr.over
}

// searcher is one search through the layers of a text.
type searcher struct {
	budget  int // the bytes of views left to look at
	reserve func(n int64) bool
	over    bool // reserve refused: the search is abandoned
}

// search finds the trees of s as it is and inside every view its layers
// see, and keeps the largest of those that overlap. Views are looked into
// while the budget allows.
func (sr *searcher) search(s string, depth int) []hit {
	hits := surface(s)
	if depth >= maxLayers {
		return hits
	}
	var reserved []span
	cut := false
	// The views of each layer searched so far, each layer's in text order.
	var searched [][]span
	for _, l := range layers {
		views, res := l.peel(s)
		if sr.reserve != nil && len(views) > 0 {
			held := 0
			for _, v := range views {
				held += len(v.text)
			}
			if !sr.reserve(int64(held)) {
				sr.over = true
			}
		}
		if sr.over {
			return nil
		}
		reserved = append(reserved, res...)
		cut = cut || l.cuts && len(res) > 0
		var mine []span
		for _, v := range views {
			if insideAny(span{v.from, v.to}, searched) {
				// An earlier layer's view holds it, and that view is
				// searched with every layer: a piece of a cut text
				// holds the same JSON strings, a numbered read the
				// same strings without the numbers.
				continue
			}
			if len(v.text) > sr.budget {
				continue
			}
			mine = append(mine, span{v.from, v.to})
			sr.budget -= len(v.text)
			found := sr.search(v.text, depth+1)
			if sr.over {
				return nil
			}
			if len(found) == 0 {
				continue
			}
			for _, up := range l.wrap(s, v, found) {
				up.peeled++
				hits = append(hits, up)
			}
		}
		searched = append(searched, mine)
	}
	if len(reserved) > 0 {
		hits = slices.DeleteFunc(hits, func(h hit) bool { return touches(s, h, reserved) })
	}
	if cut {
		for i := range hits {
			hits[i].cut = true
		}
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
	return overlaps(h.at(), reserved)
}

// markerLines returns the lines of s that hold the spans.
func markerLines(s string, spans []span) []span {
	lines := make([]span, len(spans))
	for i, r := range spans {
		lines[i] = span{strings.LastIndexByte(s[:r.start], '\n') + 1, lineEnd(s, r.end)}
	}
	return lines
}

// insideAny says whether x lies within a span of one of groups, each
// sorted and disjoint: one binary search per group.
func insideAny(x span, groups [][]span) bool {
	for _, g := range groups {
		i := sort.Search(len(g), func(i int) bool { return g[i].end >= x.end })
		if i < len(g) && g[i].start <= x.start {
			return true
		}
	}
	return false
}

// overlaps says whether x shares a byte with one of spans.
func overlaps(x span, spans []span) bool {
	return slices.ContainsFunc(spans, func(r span) bool { return x.start < r.end && r.start < x.end })
}

// disjoint keeps, of hits that overlap, the one with the most lines (then
// the one peeled the least, then the first), and returns them in text order.
// The same tree is often found twice, through different stacks of layers.
// Each hit is checked against its neighbours among those kept, so that a
// text of a thousand trees costs a sort, not a million comparisons.
func disjoint(hits []hit) []hit {
	if len(hits) < 2 {
		return hits
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		return cmp.Or(len(b.block.Lines)-len(a.block.Lines), a.peeled-b.peeled, a.at().start-b.at().start)
	})
	var kept []hit // in text order
	for _, h := range hits {
		at := h.at()
		i := sort.Search(len(kept), func(i int) bool { return kept[i].at().start >= at.start })
		if i > 0 && kept[i-1].at().end > at.start || i < len(kept) && kept[i].at().start < at.end {
			continue
		}
		kept = slices.Insert(kept, i, h)
	}
	return kept
}

// wrapCut places the trees found in a piece of a cut text in the text.
func wrapCut(_ string, v view, hits []hit) []hit {
	for _, h := range hits {
		for k := range h.places {
			p := &h.places[k]
			p.start, p.own, p.end = p.start+v.from, p.own+v.from, p.end+v.from
		}
	}
	return hits
}
