package proxy

import (
	"bytes"
	"io"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/focusgate/focusgate"
)

// A heldBody is a request body read whole into a buffer that is reused once
// nothing reads it any more. Reading a 190 KB body into a fresh buffer was
// the largest single cost of a cache hit after the pipeline's own work:
// allocating and zeroing the buffer, and the collections that follow
// (BENCHMARKS.md, ninth and tenth rounds).
//
// Besides the handler, two readers may outlive the handler's own use of the
// body, and each holds a reference while it reads:
//   - the transport, which may still be writing the body upstream after the
//     answer has come, and closes it when done (a retry's GetBody is called
//     only while the handler waits in RoundTrip, still holding its own);
//   - an inspection that ran past its budget, still walking the body on its
//     worker while the body goes out as it came (focusgate.Request.Holder).
//
// The buffer goes back to its pool when the last reference is let go. A
// reference never let go only costs the reuse: the collector takes the buffer.
// Nothing that outlives a request keeps a view of its body: detection copies
// every string it remembers, and the tests poison a buffer as it goes back.
type heldBody struct {
	b     []byte // the body
	buf   []byte // the pooled buffer under b; nil when b is not pooled
	class int
	refs  atomic.Int32
}

// Pooled buffers come in powers of two from 4 KB to 4 MB. A larger body is
// rare enough (a long conversation's history) that its allocation does not
// matter, and pooling it would keep megabytes idle between collections.
const (
	minPooledShift = 12
	maxPooledShift = 22
)

var bodyPools [maxPooledShift - minPooledShift + 1]sync.Pool // of *heldBody

// poisonReleased makes a buffer that goes back to its pool unreadable as
// JSON, so that a test sees any view of a body kept past its release.
var poisonReleased bool

// classOf is the pool whose buffers hold n bytes, or -1 for none.
func classOf(n int64) int {
	if n <= 0 || n > 1<<maxPooledShift {
		return -1
	}
	shift := bits.Len64(uint64(n - 1))
	return max(shift, minPooledShift) - minPooledShift
}

// newHeldBody returns a body of n bytes to read into, held once (by the
// caller), from a pool when n fits one.
func newHeldBody(n int64) *heldBody {
	class := classOf(n)
	if class < 0 {
		h := &heldBody{b: make([]byte, n), class: -1}
		h.refs.Store(1)
		return h
	}
	h, _ := bodyPools[class].Get().(*heldBody)
	if h == nil {
		h = &heldBody{buf: make([]byte, 1<<(class+minPooledShift)), class: class}
	}
	h.b = h.buf[:n]
	h.refs.Store(1)
	return h
}

// unpooled holds b, which no pool owns.
func unpooled(b []byte) *heldBody {
	h := &heldBody{b: b, class: -1}
	h.refs.Store(1)
	return h
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
	if h.class < 0 {
		return
	}
	if poisonReleased {
		for i := range h.b {
			h.b[i] = 0xff
		}
	}
	h.b = nil
	bodyPools[h.class].Put(h)
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
