package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/gin-gonic/gin"

	"github.com/focusgate/focusgate"
)

// requestInfo is what the handlers tell the access log about a request
// beyond what gin records. It travels in the request's context.
type requestInfo struct {
	// bytesIn is the size of the body as the client sent it: the rewritten
	// request's ContentLength says what went upstream instead. -1: unknown.
	bytesIn atomic.Int64
	// clientGone is set when the upstream call failed because the client
	// went away; the log says 499, the client is sent nothing.
	clientGone atomic.Bool
	// bodyTimedOut is set when the client did not send its body within
	// Options.BodyReadTimeout.
	bodyTimedOut atomic.Bool
	// match is the request's provider and, for an inspected request, its
	// route, set before the handler runs.
	match focusgate.Match
	// keyInPath is set on a request refused because its path holds a
	// gateway key: the path is then recorded nowhere.
	keyInPath bool
	// switched is set when the upstream switched protocols (a WebSocket
	// passed through): ReverseProxy answers 101 on the hijacked connection,
	// which the response writer never sees.
	switched atomic.Bool
}

// answered is the status the client was answered with, as the access log,
// the metrics and the trace record it.
func answered(c *gin.Context) int {
	if infoFrom(c.Request.Context()).switched.Load() {
		return http.StatusSwitchingProtocols
	}
	return c.Writer.Status()
}

// isTimeout reports whether err is a deadline passing, such as a
// connection's read deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

type requestInfoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	if ri == nil {
		ri = &requestInfo{} // a handler used outside the engine, in tests
	}
	return ri
}

// countingBody counts what a passthrough request's body delivers and lifts
// the body-read deadline once the body is read or closed: a deadline left on
// the connection would cut the response stream that follows.
type countingBody struct {
	body     io.ReadCloser
	info     *requestInfo
	n        atomic.Int64 // Read and Close may run on different goroutines
	finished func()
	done     atomic.Bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.n.Add(int64(n))
	if err != nil && isTimeout(err) {
		b.info.bodyTimedOut.Store(true)
	}
	if err != nil {
		b.finish()
	}
	return n, err
}

func (b *countingBody) Close() error {
	b.finish()
	return b.body.Close()
}

func (b *countingBody) finish() {
	if b.done.Swap(true) {
		return
	}
	b.info.bytesIn.Store(b.n.Load())
	b.finished()
}
