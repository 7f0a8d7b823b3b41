package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/focusgate/focusgate"
)

// The handler owns the exchange of a request whose body it read, as
// Caddy's reverse proxy does: it builds the outgoing request, signs it once
// its body is final, sends it, may send it once more (a context-window
// rescue, see inspect), and streams the answer back. Requests passing
// through untouched go through httputil.ReverseProxy instead (forward.go).

// send sends body upstream as the request in would have gone: to dest, with
// in's headers, less hop-by-hop headers and focusgate's own, with the
// gateway's credential for p.
func (s *Server) send(ctx context.Context, in *http.Request, dest *url.URL, p *focusgate.Provider, body []byte, held *heldBody) (*http.Response, error) {
	out := outgoing(ctx, in, dest, body, held)
	if err := s.authorize(ctx, out, p, body); err != nil {
		return nil, err
	}
	return s.transport.RoundTrip(out)
}

// outgoing is the upstream request for in, to dest, with body, which held
// holds for as long as the transport reads it.
func outgoing(ctx context.Context, in *http.Request, dest *url.URL, body []byte, held *heldBody) *http.Request {
	out := in.Clone(ctx)
	out.RequestURI = ""
	out.URL = dest
	out.Host = ""
	out.Close = false
	removeHopByHop(out.Header)
	for h := range out.Header {
		if strings.HasPrefix(h, headerPrefix) {
			delete(out.Header, h)
		}
	}
	stripOwnTrailers(out)
	if _, ok := out.Header["User-Agent"]; !ok {
		// Go's client would send its own; a transparent gateway adds none.
		out.Header.Set("User-Agent", "")
	}
	setBody(out, body, held)
	return out
}

// hopByHop are the headers of one connection, which a proxy never passes on
// (RFC 9110 section 7.6.1).
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHopByHop removes the hop-by-hop headers from h, and those the
// Connection header names. "Te: trailers" stays: it says the client takes
// trailers, which gRPC-style answers need.
func removeHopByHop(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	trailers := false
	for _, v := range h["Te"] {
		trailers = trailers || strings.EqualFold(textproto.TrimString(v), "trailers")
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
	if trailers {
		h.Set("Te", "trailers")
	}
}

// respond streams resp to the client: its status and headers as they came
// (less hop-by-hop ones), then its body, flushed write by write when it is a
// stream (server-sent events, AWS event streams, any answer of unknown
// length), then its trailers.
func (s *Server) respond(c *gin.Context, resp *http.Response) {
	defer resp.Body.Close()
	w := c.Writer
	removeHopByHop(resp.Header)
	h := w.Header()
	for k, vv := range resp.Header {
		for _, v := range vv {
			h.Add(k, v)
		}
	}
	announced := len(resp.Trailer)
	if announced > 0 {
		names := make([]string, 0, announced)
		for k := range resp.Trailer {
			names = append(names, k)
		}
		h.Add("Trailer", strings.Join(names, ", "))
	}
	w.WriteHeader(resp.StatusCode)
	stream := resp.ContentLength < 0 || isStream(resp.Header.Get("Content-Type"))
	if stream {
		// The headers go now: a client waits for them before the first
		// event, which may take the model a while.
		w.Flush()
	}
	if err := copyBody(w, resp.Body, stream); err != nil {
		info := infoFrom(c.Request.Context())
		var we clientWriteError
		if errors.As(err, &we) || c.Request.Context().Err() != nil {
			info.clientGone.Store(true)
		} else {
			s.log.WarnContext(c.Request.Context(), "upstream answer cut short", "path", c.Request.URL.Path, "err", err)
		}
		// The status is gone: all that is left is to cut the connection,
		// so that the client sees the answer is incomplete.
		panic(http.ErrAbortHandler)
	}
	if len(resp.Trailer) == announced {
		for k, vv := range resp.Trailer {
			h[k] = vv
		}
		if announced == 0 && h.Get("Content-Length") != "" {
			// The answer is whole: it goes now, as accessLog sends other
			// answers, and not after the bookkeeping the handler defers
			// (the outcome's log line, metrics, the dashboard), which runs
			// before accessLog's flush.
			w.Flush()
		}
		return
	}
	for k, vv := range resp.Trailer {
		h[http.TrailerPrefix+k] = vv
	}
}

// isStream says whether a content type is a stream of events.
func isStream(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "text/event-stream" || mt == "application/vnd.amazon.eventstream"
}

// clientWriteError marks a failure to write to the client, as opposed to reading
// from the upstream.
type clientWriteError struct{ error }

func (e clientWriteError) Unwrap() error { return e.error }

// copyBody copies an answer's body to the client through a pooled buffer,
// flushing after every write when flush is set.
func copyBody(w gin.ResponseWriter, body io.Reader, flush bool) error {
	buf := copyBuffers{}.Get()
	defer copyBuffers{}.Put(buf)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return clientWriteError{err}
			}
			if flush {
				w.Flush()
			}
		}
		switch {
		case rerr == io.EOF:
			return nil
		case rerr != nil:
			return rerr
		}
	}
}
