package proxy

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/focusgate/focusgate"
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
//     plain text into the error shape of the API the request speaks, as
//     far as its first bytes tell (its path and headers, matched against
//     the providers' declarations), so that SDKs report them like any
//     other API error. Their status codes stay net/http's, and the
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
	return &watchedConn{Conn: c, length: -1}, nil
}

// lineStart is how much of each line is kept to recognise a header name and
// read a Content-Length.
const lineStart = len("content-length:") + 32

// watchedConn watches the bytes a client sends for a header block that has
// both Content-Length and Transfer-Encoding, and rewrites net/http's own
// plain-text error answers. It looks at lines between blank lines: every
// header block is one such stretch, so it never misses a block with both
// headers. The body of a block with one Content-Length and no
// Transfer-Encoding is exactly that many bytes, as net/http reads it, and is
// passed over unread: a 200 KB page is not searched for line breaks. A line
// of any other body that happens to look like both headers only costs that
// connection its keep-alive.
type watchedConn struct {
	net.Conn

	// Read side, used by the connection's reading goroutine only.
	start   []byte // the first bytes of the current line
	lineLen int
	sawCL   bool
	sawTE   bool
	length  int64 // the block's one Content-Length, or -1
	skip    int64 // bytes of the body being passed over

	// head holds the first bytes of the current request's header block,
	// from its request line, to tell which API an error of net/http's own
	// answers; mu guards it, since the connection's reads and writes may
	// run on different goroutines.
	mu       sync.Mutex
	head     []byte
	lineHead int  // where the current line starts in head
	inBody   bool // the header block has ended

	// ambiguous is set once a header block had both headers; the handler of
	// the request on this connection then closes it after answering.
	ambiguous atomic.Bool
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.scan(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

// maxHead bounds the bytes of a header block kept to tell its API.
const maxHead = 4096

func (c *watchedConn) scan(b []byte) {
	for len(b) > 0 {
		if c.skip > 0 {
			n := min(c.skip, int64(len(b)))
			c.skip -= n
			b = b[n:]
			continue
		}
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i+1]
		}
		if room := maxHead - len(c.head); room > 0 {
			c.head = append(c.head, part[:min(room, len(part))]...)
		}
		if i >= 0 {
			part = part[:i]
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
	blank := c.lineLen == 0 || (c.lineLen == 1 && c.start[0] == '\r')
	endsHead := false
	switch line := c.head[min(c.lineHead, len(c.head)):]; {
	case isRequestLine(line):
		// A request starts: its line is the head's first. A length read
		// before it is not its own. A header line may end as a request
		// line does too, so the headers seen are kept: only the length is
		// forgotten, which costs nothing but the passing over.
		c.head, c.inBody = append(c.head[:0], line...), false
		c.length = -1
	case c.inBody:
		c.head = c.head[:0] // a body's lines say nothing of its API
	case blank:
		c.inBody, endsHead = true, true
	}
	c.lineHead = len(c.head)
	switch {
	case blank:
		// A blank line ends a header block. The body of a request whose
		// block had a single length and no other framing ends where that
		// many bytes do; a blank line within a body (a chunked body's
		// trailers) says nothing of the bytes after it.
		if endsHead && c.sawCL && !c.sawTE && c.length >= 0 {
			c.skip = c.length
		}
		c.sawCL, c.sawTE, c.length = false, false, -1
	case hasPrefixFold(c.start, "content-length:"):
		c.length = -1
		if !c.sawCL && c.lineLen == len(c.start) {
			c.length = contentLength(c.start[len("content-length:"):])
		}
		c.sawCL = true
	case hasPrefixFold(c.start, "transfer-encoding:"):
		c.sawTE = true
	}
	if c.sawCL && c.sawTE {
		c.ambiguous.Store(true)
	}
	c.start, c.lineLen = c.start[:0], 0
}

// contentLength reads a Content-Length's value as net/http accepts one:
// digits, between blanks. It returns -1 for any other.
func contentLength(v []byte) int64 {
	v = bytes.Trim(v, " \t\r")
	if len(v) == 0 || len(v) > 18 {
		return -1
	}
	var n int64
	for _, d := range v {
		if d < '0' || d > '9' {
			return -1
		}
		n = n*10 + int64(d-'0')
	}
	return n
}

// isRequestLine says whether a line, '\n' included, is an HTTP/1 request
// line ("POST /v1/messages HTTP/1.1").
func isRequestLine(line []byte) bool {
	line = bytes.TrimRight(line, "\r\n")
	return bytes.HasSuffix(line, []byte(" HTTP/1.1")) || bytes.HasSuffix(line, []byte(" HTTP/1.0"))
}

// provider tells from the head of the request being read which provider's
// API it speaks: its request line and the headers received of it.
func (c *watchedConn) provider() *focusgate.Provider {
	c.mu.Lock()
	head := bytes.Clone(c.head)
	c.mu.Unlock()
	line, rest, _ := bytes.Cut(head, []byte("\n"))
	method, target, _ := bytes.Cut(bytes.TrimRight(line, "\r"), []byte(" "))
	target, _, _ = bytes.Cut(target, []byte(" "))
	r, err := http.NewRequest(string(method), string(target), nil)
	if err != nil || !isRequestLine(append(line, '\n')) {
		return focusgate.DefaultProvider
	}
	for h := range bytes.SplitSeq(rest, []byte("\n")) {
		name, value, ok := bytes.Cut(h, []byte(":"))
		if ok && len(name) > 0 && !bytes.ContainsAny(name, " \t") {
			r.Header.Add(string(name), string(bytes.TrimSpace(value)))
		}
	}
	return focusgate.MatchRequest(r).Provider
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], []byte(prefix))
}

func (c *watchedConn) Write(p []byte) (int, error) {
	if answer, ok := rewriteServerError(p, c.provider); ok {
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
// the same status with a JSON body in the shape of the API the request
// speaks, which provider tells.
func rewriteServerError(p []byte, provider func() *focusgate.Provider) ([]byte, bool) {
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
	body := provider().ErrorBody(code, "focusgate: the request is not valid HTTP/1.1: "+text, "invalid_request_error", errCode)
	return fmt.Appendf(nil, "%s\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		statusLine, len(body), body), true
}
