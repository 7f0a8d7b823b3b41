package detect

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

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
//
// A tree found through a Finder is written once for each pieces it is
// written back as; the Finder remembers the bytes, and the same tree written
// back again as the same pieces is copied from them.
func (o *Observation) AppendPruned(dst, body []byte, pieces []focusgate.Piece) []byte {
	key := o.writtenKey(pieces)
	if w, ok := o.written.GetBytes(key[:]); ok {
		return append(dst, w.out...)
	}
	start := len(dst)
	dst = appendWritten(dst, body[o.base:], o.places, o.Nested+1, pieces)
	if o.written != nil {
		w := writing{out: slices.Clone(dst[start:]), places: o.places, pieces: pieces}
		o.written.PutBytes(key[:], w, len(w.out)+int(unsafe.Sizeof(place{}))*len(w.places)+int(unsafe.Sizeof(focusgate.Piece{}))*len(w.pieces))
	}
	return dst
}

// PrunedSize is about the length of what AppendPruned appends, never more,
// so that a caller can size its buffer once: exact but for the escapes of a
// stub's or marker's text beyond its leading tabs (see escapedSize).
func (o *Observation) PrunedSize(pieces []focusgate.Piece) int {
	key := o.writtenKey(pieces)
	if w, ok := o.written.GetBytes(key[:]); ok {
		return len(w.out)
	}
	return writtenSize(o.places, o.Nested+1, pieces)
}

// writing is a tree as AppendPruned wrote it back: out, its bytes, and the
// places and pieces it was written from, held so that the addresses its key
// is made of (writtenKey) cannot come to hold other values while it is
// remembered.
type writing struct {
	out    []byte
	places []place
	pieces []focusgate.Piece
}

// writtenKey identifies a tree written back as pieces by the addresses of
// its places and of its pieces, without reading either. Both are shared and
// never modified: a Finder hands the same places to every request that
// carries the tree's string, byte for byte, and pruning the same pieces to
// every request pruned with the same selection, so that equal addresses
// mean equal bytes out. Pieces made anew, equal or not, are written anew.
func (o *Observation) writtenKey(pieces []focusgate.Piece) [40]byte {
	var k [40]byte
	binary.LittleEndian.PutUint64(k[0:], uint64(uintptr(unsafe.Pointer(unsafe.SliceData(o.places)))))
	binary.LittleEndian.PutUint64(k[8:], uint64(len(o.places)))
	binary.LittleEndian.PutUint64(k[16:], uint64(uintptr(unsafe.Pointer(unsafe.SliceData(pieces)))))
	binary.LittleEndian.PutUint64(k[24:], uint64(len(pieces)))
	binary.LittleEndian.PutUint64(k[32:], uint64(o.Nested))
	return k
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
