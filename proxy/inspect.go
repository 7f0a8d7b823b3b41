package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/usage"
)

// inspect handles the routes whose bodies may carry page observations. The
// body is read whole (under the size cap and a read deadline) and decoded,
// then handed to the pipeline; what goes upstream is the body it returns,
// with a matching Content-Length, signed with the gateway's credential. An
// answer refusing it as longer than the model's context window may be
// followed by a second attempt (rescue); the answer that goes to the client
// streams back as it comes.
func (s *Server) inspect(c *gin.Context, m focusgate.Match, base *url.URL) {
	r := c.Request
	ctx := r.Context()
	dest := destination(base, m.Route, r.URL)
	held, ok := s.readBody(c)
	if !ok {
		return
	}
	defer held.Release()
	raw := held.b

	// A body that cannot be read goes on as it came; the pipeline
	// reports it skipped for the reason it was not read.
	body, unread := raw, focusgate.Reason("")
	enc := r.Header.Get("Content-Encoding")
	switch {
	case s.clientSigned(ctx, r, m.Provider):
		unread = focusgate.ReasonClientSigned
	case enc != "":
		decoded, charged, err := decode(raw, enc, s.opts.MaxBodyBytes, s.opts.Memory)
		switch {
		case errors.Is(err, errBodyTooLarge):
			s.tooLarge(c)
			return
		case errors.Is(err, errBusy):
			unread = focusgate.ReasonBusy
		case err != nil:
			// Not ours to judge: the upstream answers for a body it
			// cannot read either, so it goes on as it came.
			unread = focusgate.ReasonUndecodable
		default:
			// The pipeline charges the body again while it inspects it.
			s.opts.Memory.Release(charged)
			body = decoded
			r.Header.Del("Content-Encoding")
		}
	}
	req := focusgate.Request{
		API:        m.Route.API,
		Provider:   m.Provider,
		Vars:       m.Vars,
		Body:       body,
		Model:      s.model(m),
		Aliases:    s.upstreams[m.Provider.Name].Models,
		Mode:       r.Header.Get(HeaderMode),
		Prompt:     r.Header.Get(HeaderPrompt),
		Credential: m.Provider.Credential(r),
		Sizing:     m.Route.Sizing,
		Unread:     unread,
		Holder:     held,
	}
	sent := len(body) // decoded: what estimates the step's tokens
	var out focusgate.Outcome
	var meter *usage.Meter
	if unread == "" && s.opts.Holdout != nil {
		// The arm is decided before anything else is done to the body.
		ticket := s.opts.Holdout.Assign(req)
		req.Holdout = ticket.Arm == focusgate.ArmHoldout
		// The step is priced by the model the pipeline reports; the ticket
		// has one only when the route or the body's leading members name it.
		req.WantModel = ticket.OK && !req.Sizing && ticket.Model == ""
		if ticket.OK && !req.Sizing {
			meter = &usage.Meter{}
			defer func() { s.recordStep(r, ticket, out, sent, c.Writer.Status(), meter) }()
		}
	}
	forward := held // holds what goes upstream
	if s.opts.Pipeline != nil {
		body, out = s.opts.Pipeline.Rewrite(ctx, req)
		if rewritten(body, req.Body) {
			forward = holding(body)
			defer forward.Release()
		}
		sent = len(body)
	}
	if enc != "" && r.Header.Get("Content-Encoding") == "" && (req.Holdout || !rewritten(body, req.Body)) {
		// A decoded body left as it was (held out, or with nothing
		// pruned) goes as it came, compressed.
		body, forward = raw, held
		r.Header.Set("Content-Encoding", enc)
	}
	if out.Status != "" {
		// Reported once the answer is over: a request refused for its
		// length may be rescued, and is reported as it went.
		defer func() {
			out := out
			s.books.Do(func() {
				s.logOutcome(ctx, out)
				s.metrics.observeOutcome(keyName(ctx), out)
				s.record(ctx, out)
			})
		}()
	}
	resp, err := s.send(ctx, r, dest, m.Provider, body, forward)
	if err == nil && s.opts.Pipeline != nil && !req.Holdout && !req.Sizing && unread == "" {
		// A held-out conversation is not rescued from its context window
		// either: its overflows are part of the comparison. Nor is a body
		// that was not read.
		resp, out = s.rescue(ctx, r, dest, req, held, resp, sent, out)
	}
	setHeaders(c.Writer.Header(), out)
	if err != nil {
		s.upstreamError(c.Writer, r, err)
		return
	}
	if meter != nil {
		resp.Body = s.meter(resp, meter)
	}
	s.respond(c, resp)
}

// passSigned forwards a request on no route to a provider whose upstream
// takes the gateway's signature over the body (AWS SigV4), or a token of
// the gateway's: the body is read whole, under the cap, to be signed, and
// goes as it came. The answer streams back.
func (s *Server) passSigned(c *gin.Context, m focusgate.Match, base *url.URL) {
	r := c.Request
	held, ok := s.readBody(c)
	if !ok {
		return
	}
	defer held.Release()
	if !s.decodesUnderCap(c, held.b) {
		return
	}
	resp, err := s.send(r.Context(), r, upstreamURL(base, r.URL), m.Provider, held.b, held)
	if err != nil {
		s.upstreamError(c.Writer, r, err)
		return
	}
	s.respond(c, resp)
}

// logOutcome writes one line per request focusgate tried to prune, with the
// numbers; requests with nothing to prune are logged at debug level only.
func (s *Server) logOutcome(ctx context.Context, out focusgate.Outcome) {
	level := slog.LevelInfo
	if out.Quiet() {
		level = slog.LevelDebug
	}
	// Most requests have nothing to prune and are logged at debug level,
	// which is usually off: their attributes are not built for nothing.
	if !s.log.Enabled(ctx, level) {
		return
	}
	s.log.LogAttrs(ctx, level, "observations", append(out.LogAttrs(), slog.String("key", keyName(ctx)))...)
}

// readBody reads a request body whole, under the size cap and the read
// deadline, and answers the client itself (413, 408, 400) when it cannot:
// ok is false then.
func (s *Server) readBody(c *gin.Context) (held *heldBody, ok bool) {
	r := c.Request
	if r.ContentLength > s.opts.MaxBodyBytes {
		s.tooLarge(c)
		return nil, false
	}
	rc := http.NewResponseController(c.Writer)
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout))
	held, err := readAll(r.Body, s.opts.MaxBodyBytes, r.ContentLength)
	_ = rc.SetReadDeadline(time.Time{})
	if held != nil {
		infoFrom(r.Context()).bytesIn.Store(int64(len(held.b)))
	}
	switch {
	case errors.Is(err, errBodyTooLarge):
		s.tooLarge(c)
		return nil, false
	case isTimeout(err):
		s.slowBody(c.Writer)
		return nil, false
	case err != nil:
		writeError(c.Writer, http.StatusBadRequest, "focusgate: could not read the request body", "invalid_request_error", "unreadable_body")
		return nil, false
	}
	return held, true
}

// decodesUnderCap says whether raw, a body that goes out as it came,
// decodes within the size cap, which holds on every route, and answers the
// client with a 413 when it does not. A body that does not decode at all is
// the upstream's to refuse.
func (s *Server) decodesUnderCap(c *gin.Context, raw []byte) bool {
	enc := c.Request.Header.Get("Content-Encoding")
	if enc == "" || len(raw) == 0 {
		return true
	}
	if err := checkDecodedSize(raw, enc, s.opts.MaxBodyBytes); errors.Is(err, errBodyTooLarge) {
		s.tooLarge(c)
		return false
	}
	return true
}

// slowBody answers a client that did not send its body within
// BodyReadTimeout. The rest of the body is not waited for.
func (s *Server) slowBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusRequestTimeout, "focusgate: the request body was not received in time", "invalid_request_error", "request_timeout")
}

func (s *Server) tooLarge(c *gin.Context) {
	// The rest of the body is not read: close the connection rather than
	// drain it.
	c.Header("Connection", "close")
	writeError(c.Writer, http.StatusRequestEntityTooLarge, errBodyTooLarge.Error(), "invalid_request_error", "request_too_large")
}
