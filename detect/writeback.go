package detect

import (
	"fmt"

	"github.com/focusgate/focusgate"
)

// AppendPruned appends to dst what goes out in place of the tree's span of
// body, body[o.RawStart:o.RawEnd], when the tree is written back as pieces
// say (prune.Result.Pieces): through every wrapper the tree was found in,
// in one pass, with no allocation beyond dst's growth. Kept lines, and what
// separates the pieces, are body's own bytes, so that every line the client
// sent goes back exactly as it came, escapes and line numbers included; a
// stub keeps what precedes its element on its line (a file read's number);
// the text of stubs and markers is escaped for the place of the tree
// (Nested+1 times) as JSON.stringify escapes.
//
// The pieces must cover the tree's lines in order, as pruning makes them
// from the tree's own Lines; AppendPruned panics otherwise, as an index out
// of range would.
func (o *Observation) AppendPruned(dst, body []byte, pieces []focusgate.Piece) []byte {
	return appendWritten(dst, body[o.base:], o.places, o.Nested+1, pieces)
}

// PrunedSize is about the length of what AppendPruned appends, never more,
// so that a caller can size its buffer once: exact but for the escapes of a
// stub's or marker's text beyond its leading tabs (see escapedSize).
func (o *Observation) PrunedSize(pieces []focusgate.Piece) int {
	return writtenSize(o.places, o.Nested+1, pieces)
}

// appendWritten appends the tree whose lines lie at places in src, written
// back as pieces, with new text escaped times times.
func appendWritten(dst, src []byte, places []place, times int, pieces []focusgate.Piece) []byte {
	checkPieces(pieces, len(places))
	for i, pc := range pieces {
		if i > 0 {
			dst = append(dst, src[places[pc.From-1].end:places[pc.From].start]...)
		}
		switch pc.Kind {
		case focusgate.PieceKept:
			dst = append(dst, src[places[pc.From].start:places[pc.To-1].end]...)
		case focusgate.PieceStub:
			p := places[pc.From]
			dst = append(dst, src[p.start:p.own]...)
			dst = appendEscaped(dst, pc.Text, times)
		default:
			dst = appendEscaped(dst, pc.Text, times)
		}
	}
	return dst
}

// writtenSize is about the length appendWritten appends, never more.
func writtenSize(places []place, times int, pieces []focusgate.Piece) int {
	checkPieces(pieces, len(places))
	n := 0
	for i, pc := range pieces {
		if i > 0 {
			n += places[pc.From].start - places[pc.From-1].end
		}
		switch pc.Kind {
		case focusgate.PieceKept:
			n += places[pc.To-1].end - places[pc.From].start
		case focusgate.PieceStub:
			n += places[pc.From].own - places[pc.From].start + escapedSize(pc.Text, times)
		default:
			n += escapedSize(pc.Text, times)
		}
	}
	return n
}

// checkPieces panics unless pieces cover lines 0 to n-1 in order.
func checkPieces(pieces []focusgate.Piece, n int) {
	next := 0
	for _, pc := range pieces {
		if pc.From != next || pc.To <= pc.From || pc.Kind == focusgate.PieceStub && pc.To != pc.From+1 {
			panic(fmt.Sprintf("detect: pieces of lines %d to %d do not follow line %d of %d", pc.From, pc.To, next, n))
		}
		next = pc.To
	}
	if next != n {
		panic(fmt.Sprintf("detect: pieces end at line %d of %d", next, n))
	}
}
