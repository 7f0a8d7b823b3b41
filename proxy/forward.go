package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/gin-gonic/gin"
)

// statusClientClosed is logged when the client went away before the upstream
// answered (nginx's convention); the client never sees it.
const statusClientClosed = 499

// headerPrefix marks focusgate's own request headers, which never reach the
// upstream.
const headerPrefix = "X-Focusgate-"

func (s *Server) newReverseProxy() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:   s.rewriteRequest,
		Transport: s.opts.Transport,
		// Zero lets ReverseProxy decide per response: it flushes after every
		// write when the answer is text/event-stream or of unknown length
		// (chunked), so server-sent events and any other stream reach the
		// client as the upstream produces them, and it leaves an answer of
		// known length to the server's buffer, which saves a write system
		// call and a flush per request.
		FlushInterval: 0,
		ErrorHandler:  s.upstreamError,
		BufferPool:    copyBuffers{},
		ModifyResponse: func(res *http.Response) error {
			if res.StatusCode == http.StatusSwitchingProtocols {
				infoFrom(res.Request.Context()).switched.Store(true)
			}
			return nil
		},
	}
}

// copyBuffers lends ReverseProxy the buffers it copies answers through,
// which it would otherwise allocate (32 KiB) for every request.
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { return new([32 << 10]byte) }}

func (copyBuffers) Get() []byte { return copyBufferPool.Get().(*[32 << 10]byte)[:] }

func (copyBuffers) Put(b []byte) {
	if cap(b) == 32<<10 {
		copyBufferPool.Put((*[32 << 10]byte)(b[:32<<10]))
	}
}

// rewriteRequest points the outgoing request at the upstream. Headers stay as
// the client sent them, minus hop-by-hop ones (removed by ReverseProxy) and
// focusgate's own.
func (s *Server) rewriteRequest(pr *httputil.ProxyRequest) {
	m := infoFrom(pr.In.Context()).match
	if m.Provider == nil {
		m.Provider = focusgate.DefaultProvider
	}
	// The handler checked that the request has somewhere to go.
	base, _ := s.target(m)
	up := upstreamURL(base, pr.In.URL)
	pr.Out.URL.Scheme, pr.Out.URL.Host = up.Scheme, up.Host
	pr.Out.URL.Path, pr.Out.URL.RawPath = up.Path, up.RawPath
	pr.Out.Host = ""

	// ReverseProxy drops Forwarded and X-Forwarded-* before Rewrite; a
	// transparent gateway passes on what the client sent and adds nothing of
	// its own.
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := pr.In.Header[h]; ok {
			pr.Out.Header[h] = v
		}
	}
	for h := range pr.Out.Header {
		if strings.HasPrefix(h, headerPrefix) {
			delete(pr.Out.Header, h)
		}
	}
	stripOwnTrailers(pr.Out)
	// Only a credential that does not sign the body can be put here: a
	// request to a provider whose credential does goes through passSigned.
	_ = s.authorize(pr.Out.Context(), pr.Out, m.Provider, nil)
}

// destination is where an inspected request goes: its path joined onto the
// upstream's base, or the path its route names upstream (Route.Upstream),
// with its query either way.
func destination(base *url.URL, rt *focusgate.Route, in *url.URL) *url.URL {
	if rt == nil || rt.Upstream == "" {
		return upstreamURL(base, in)
	}
	u := *in
	u.Path, u.RawPath = rt.Upstream, ""
	return upstreamURL(base, &u)
}

// upstreamURL joins the request path onto the upstream base URL. Clients are
// configured with a base URL that ends in /v1 (OPENAI_BASE_URL) or not; when
// the upstream's base also ends in /v1, a leading /v1 of the request is not
// repeated, so /v1/models and /models both reach https://host/v1/models.
func upstreamURL(base, in *url.URL) *url.URL {
	basePath := strings.TrimSuffix(base.EscapedPath(), "/")
	if basePath != "" && !strings.HasPrefix(basePath, "/") {
		basePath = "/" + basePath // a base built as url.URL{Path: "v1"}
	}
	reqPath := in.EscapedPath()
	if strings.HasSuffix(basePath, "/v1") && (reqPath == "/v1" || strings.HasPrefix(reqPath, "/v1/")) {
		reqPath = strings.TrimPrefix(reqPath, "/v1")
	}
	if reqPath != "" && !strings.HasPrefix(reqPath, "/") {
		reqPath = "/" + reqPath
	}
	joined := basePath + reqPath
	out := *base
	out.RawQuery, out.Fragment = in.RawQuery, ""
	out.Path, out.RawPath = joined, joined
	if p, err := url.PathUnescape(joined); err == nil {
		out.Path = p
	}
	return &out
}

// forward sends the (possibly rewritten) request upstream and copies the
// answer back.
func (s *Server) forward(c *gin.Context) {
	s.proxy.ServeHTTP(c.Writer, c.Request)
}

// passthrough forwards any request focusgate does not inspect, streaming its
// body under the size cap.
func (s *Server) passthrough(c *gin.Context) {
	r := c.Request
	if r.ContentLength > s.opts.MaxBodyBytes {
		s.tooLarge(c)
		return
	}
	if r.Header.Get("Content-Encoding") != "" && r.Body != nil && r.Body != http.NoBody {
		s.passCompressed(c)
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		// The same read deadline as on the inspected routes: a client
		// trickling its body must not hold an upstream connection for long.
		rc := http.NewResponseController(c.Writer)
		_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout))
		r.Body = &countingBody{
			body:     http.MaxBytesReader(c.Writer, r.Body, s.opts.MaxBodyBytes),
			info:     infoFrom(r.Context()),
			finished: func() { _ = rc.SetReadDeadline(time.Time{}) },
		}
	}
	s.forward(c)
}

// passCompressed forwards a compressed body on a passthrough route as it
// came, once it is known to decode within the cap: the cap on decoded size
// holds on every route, and a stream cannot be checked before it has all
// been read, so such a body is read whole (its compressed size is under the
// cap too) and counted as it decodes, in constant memory.
func (s *Server) passCompressed(c *gin.Context) {
	held, ok := s.readBody(c)
	if !ok {
		return
	}
	defer held.Release()
	if !s.decodesUnderCap(c, held.b) {
		return
	}
	setBody(c.Request, held.b, held)
	s.forward(c)
}

// upstreamError answers when no response came from the upstream. Errors are
// in the shape of the request's API so that SDKs surface them as API errors.
func (s *Server) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	info := infoFrom(r.Context())
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, errBodyTooLarge.Error(), "invalid_request_error", "request_too_large")
	case info.bodyTimedOut.Load():
		s.slowBody(w)
	case r.Context().Err() != nil:
		// The client is gone, or has half-closed its connection, which
		// net/http cannot tell apart: send nothing, not even a status of
		// focusgate's own, and let net/http close the connection. The log
		// says 499.
		info.clientGone.Store(true)
		panic(http.ErrAbortHandler)
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		s.log.WarnContext(r.Context(), "upstream timeout", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusGatewayTimeout, "focusgate: the upstream did not answer in time", "upstream_error", "upstream_timeout")
	default:
		s.log.WarnContext(r.Context(), "upstream unreachable", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusBadGateway, unreachable(s.upstreamHost(info.match), err), "upstream_error", "bad_gateway")
	}
}

// upstreamHost is the host of the upstream a request was sent to.
func (s *Server) upstreamHost(m focusgate.Match) string {
	if m.Provider == nil {
		m.Provider = focusgate.DefaultProvider
	}
	if base, err := s.target(m); err == nil && base != nil {
		return base.Host
	}
	return m.Provider.Name
}

// unreachable tells the client which upstream could not be reached and, in
// a few words, why: an agent shows its user the message of a 502, and the
// gateway's log, which has the whole error, is often not at hand. Only the
// host is named, which the operator configured; the path and query, which
// may hold a client's key, are not.
func unreachable(host string, err error) string {
	why := "the connection failed"
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dns):
		why = "its name does not resolve from the gateway"
	case errors.Is(err, syscall.ECONNREFUSED):
		why = "it refused the connection"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		why = "it closed the connection without an answer"
	case errors.As(err, &cert):
		why = "its TLS certificate is not trusted by the gateway"
	}
	return "focusgate: the upstream " + host + " could not be reached: " + why
}
