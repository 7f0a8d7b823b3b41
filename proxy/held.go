package proxy

import (
	"bytes"
	"io"
	"sync/atomic"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/bufpool"
)

// A heldBody is a request body in a buffer of internal/bufpool, the body
// read from the client or the one the pipeline wrote, which goes back to the
// pool once nothing reads it any more.
//
// Besides the handler, two readers may outlive the handler's own use of a
// body, and each holds a reference while it reads:
//   - the transport, which may still be writing the body upstream after the
//     answer has come, and closes it when done (a retry's GetBody is called
//     only while the handler waits in RoundTrip, still holding its own);
//   - an inspection abandoned at its deadline, still walking the body on its
//     worker while the body goes out as it came (focusgate.Request.Holder).
//
// The buffer goes back to its pool when the last reference is let go. A
// reference never let go only costs the reuse: the collector takes the buffer.
// Nothing that outlives a request keeps a view of its body: detection copies
// every string it remembers, and the tests poison a buffer as it goes back.
type heldBody struct {
	b    []byte
	refs atomic.Int32
}

// poisonReleased makes a buffer that goes back to its pool unreadable as
// JSON, so that a test sees any view of a body kept past its release.
var poisonReleased bool

// newHeldBody returns a body of n bytes to read into, held once (by the
// caller).
func newHeldBody(n int64) *heldBody {
	return holding(bufpool.Get(int(n)))
}

// holding holds b, a buffer the caller owns and gives up, once (for the
// caller).
func holding(b []byte) *heldBody {
	h := &heldBody{b: b}
	h.refs.Store(1)
	return h
}

// rewritten says whether out, a body the pipeline returned for in, is a
// buffer of its own rather than in itself.
func rewritten(out, in []byte) bool {
	return len(out) > 0 && (len(in) == 0 || &out[0] != &in[0])
}

var _ focusgate.Holder = (*heldBody)(nil)

// Hold takes another reference.
func (h *heldBody) Hold() { h.refs.Add(1) }

// Release lets a reference go, and the buffer back to its pool with the last.
func (h *heldBody) Release() {
	switch n := h.refs.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic("proxy: request body released more often than held")
	}
	if poisonReleased {
		for i := range h.b {
			h.b[i] = 0xff
		}
	}
	bufpool.Put(h.b)
	h.b = nil
}

// reader returns a reader of the body for the upstream request, which holds
// the body until the transport closes it.
func (h *heldBody) reader(b []byte) io.ReadCloser {
	r := &heldReader{held: h}
	r.Reset(b)
	h.refs.Add(1)
	return r
}

// heldReader reads a body for the transport, letting its reference go when
// the transport closes it; the transport may close it more than once.
type heldReader struct {
	bytes.Reader
	held   *heldBody
	closed atomic.Bool
}

func (r *heldReader) Close() error {
	if r.closed.CompareAndSwap(false, true) {
		r.held.Release()
	}
	return nil
}
