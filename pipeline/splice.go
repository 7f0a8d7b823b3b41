package pipeline

import (
	"cmp"
	"slices"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/internal/bufpool"
)

// edit is a pruned page to write in place of its tree's span of the body.
type edit struct {
	obs    *detect.Observation
	pieces []focusgate.Piece
}

// splice writes the pruned pages in place of their trees, in one pass over
// body into a buffer sized once (it grows only for new text with escapes).
// Bytes outside the trees are copied as they are, and so are the lines each
// page kept (detect writes each page back through its wrappers), so
// everything focusgate did not prune reaches the upstream exactly as the
// client sent it. The edits must not overlap. The buffer comes from
// internal/bufpool: the body is the caller's to give back.
func splice(body []byte, edits []edit) []byte {
	slices.SortFunc(edits, func(a, b edit) int { return cmp.Compare(a.obs.RawStart, b.obs.RawStart) })
	size := len(body)
	for _, e := range edits {
		size += e.obs.PrunedSize(e.pieces) - (e.obs.RawEnd - e.obs.RawStart)
	}
	out := bufpool.Get(size)[:0]
	prev := 0
	for _, e := range edits {
		out = append(out, body[prev:e.obs.RawStart]...)
		out = e.obs.AppendPruned(out, body, e.pieces)
		prev = e.obs.RawEnd
	}
	return append(out, body[prev:]...)
}
