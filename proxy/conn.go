package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
)

// Harden fits an http.Server serving the gateway with what net/http does
// not offer on its own, and returns the listener to serve on:
//
//   - A request with both Content-Length and Transfer-Encoding is answered
//     with Connection: close, as RFC 9112 §6.1 requires of a server that
//     processes one: the two lengths disagreeing is how requests are
//     smuggled. net/http silently drops the Content-Length, so the raw
//     header lines are watched on the connection to notice.
//   - The errors net/http answers itself, before any handler runs (a
//     malformed request, conflicting Content-Length headers, an unsupported
//     Transfer-Encoding, headers over MaxHeaderBytes), are rewritten from
//     plain text into OpenAI's error shape, so that SDKs report them like
//     any other API error. Their status codes stay net/http's, and the
//     connection is still closed after them.
//
// Call it before serving; srv.Handler and srv.ConnContext are wrapped.
func Harden(srv *http.Server, ln net.Listener) net.Listener {
	nextCtx := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if nextCtx != nil {
			ctx = nextCtx(ctx, c)
		}
		if w, ok := c.(*watchedConn); ok {
			ctx = context.WithValue(ctx, watchedConnCtx{}, w)
		}
		return ctx
	}
	h := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(watchedConnCtx{}).(*watchedConn); ok && c.ambiguous.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
	return watchedListener{ln}
}

type watchedConnCtx struct{}

type watchedListener struct{ net.Listener }

func (l watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c}, nil
}

// lineStart is how much of each line is kept to recognise a header name.
const lineStart = len("transfer-encoding:")

// watchedConn watches the bytes a client sends for a header block that has
// both Content-Length and Transfer-Encoding, and rewrites net/http's own
// plain-text error answers. It looks at lines between blank lines: every
// header block is one such stretch, so it never misses a block with both
// headers. A body line that happens to look like both only costs that
// connection its keep-alive.
type watchedConn struct {
	net.Conn

	// Read side, used by the connection's reading goroutine only.
	start   []byte // the first bytes of the current line
	lineLen int
	sawCL   bool
	sawTE   bool

	// ambiguous is set once a header block had both headers; the handler of
	// the request on this connection then closes it after answering.
	ambiguous atomic.Bool
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.scan(p[:n])
	return n, err
}

func (c *watchedConn) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if room := lineStart - len(c.start); room > 0 {
			c.start = append(c.start, part[:min(room, len(part))]...)
		}
		c.lineLen += len(part)
		if i < 0 {
			return
		}
		c.endLine()
		b = b[i+1:]
	}
}

func (c *watchedConn) endLine() {
	switch {
	case c.lineLen == 0 || (c.lineLen == 1 && c.start[0] == '\r'):
		c.sawCL, c.sawTE = false, false // a blank line ends a header block
	case hasPrefixFold(c.start, "content-length:"):
		c.sawCL = true
	case hasPrefixFold(c.start, "transfer-encoding:"):
		c.sawTE = true
	}
	if c.sawCL && c.sawTE {
		c.ambiguous.Store(true)
	}
	c.start, c.lineLen = c.start[:0], 0
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], []byte(prefix))
}

func (c *watchedConn) Write(p []byte) (int, error) {
	if answer, ok := rewriteServerError(p); ok {
		if _, err := c.Conn.Write(answer); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// serverErrorHeaders is what follows the status line of every error that
// net/http writes on its own (net/http/server.go, conn.serve). A response
// from a handler never looks like this: net/http adds a Date header to it.
const serverErrorHeaders = "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// maxServerError bounds the writes examined: net/http's own errors are short.
const maxServerError = 1024

// rewriteServerError turns one of net/http's plain-text error responses into
// the same status with an OpenAI-shaped JSON body.
func rewriteServerError(p []byte) ([]byte, bool) {
	if len(p) > maxServerError || !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return nil, false
	}
	statusLine, rest, ok := bytes.Cut(p, []byte("\r\n"))
	if !ok || !bytes.HasPrefix(rest, []byte(serverErrorHeaders)) || len(statusLine) < len("HTTP/1.1 400") {
		return nil, false
	}
	code, err := strconv.Atoi(string(statusLine[9:12]))
	if err != nil || code < 400 {
		return nil, false
	}
	text := string(rest[len(serverErrorHeaders):])
	errCode := "bad_request"
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge:
		errCode = "request_header_fields_too_large"
	case http.StatusNotImplemented:
		errCode = "unsupported_transfer_encoding"
	}
	var e apiError
	e.Error.Message = "focusgate: the request is not valid HTTP/1.1: " + text
	e.Error.Type, e.Error.Code = "invalid_request_error", errCode
	body, _ := json.Marshal(e)
	return fmt.Appendf(nil, "%s\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		statusLine, len(body), body), true
}
