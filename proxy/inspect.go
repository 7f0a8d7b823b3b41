package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/usage"
)

// inspect handles the routes whose bodies may carry page observations. The
// body is read whole (under the size cap and a read deadline) and decoded,
// then handed to the pipeline; what goes upstream is the body it returns,
// with a matching Content-Length.
func (s *Server) inspect(api focusgate.API) gin.HandlerFunc {
	return func(c *gin.Context) {
		r, m := c.Request, infoFrom(c.Request.Context()).match
		if r.ContentLength > s.opts.MaxBodyBytes {
			s.tooLarge(c)
			return
		}
		raw, ok := s.readBody(c)
		if !ok {
			return
		}

		// A body that cannot be read goes on as it came; the pipeline
		// reports it skipped for the reason it was not read.
		body, unread := raw, focusgate.Reason("")
		enc := r.Header.Get("Content-Encoding")
		if enc != "" {
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
		sizing := m.Route.Sizing
		var ticket focusgate.Ticket
		var out focusgate.Outcome
		sent := len(body) // decoded: what estimates the step's tokens
		if unread == "" && s.opts.Holdout != nil {
			// The arm is decided before anything else is done to the body.
			ticket = s.opts.Holdout.Assign(focusgate.Request{API: api, Body: body, Model: m.Model})
			if ticket.OK && !sizing {
				infoFrom(r.Context()).meter = &usage.Meter{}
				defer func() { s.recordStep(r, ticket, out, sent, c.Writer.Status()) }()
			}
		}
		held := ticket.Arm == focusgate.ArmHoldout
		var rs *rescue
		if s.opts.Pipeline != nil {
			req := focusgate.Request{
				API:        api,
				Body:       body,
				Mode:       r.Header.Get(HeaderMode),
				Prompt:     r.Header.Get(HeaderPrompt),
				Model:      m.Model,
				Credential: m.Provider.Credential(r),
				Sizing:     sizing,
				Holdout:    held,
				Unread:     unread,
			}
			body, out = s.opts.Pipeline.Rewrite(r.Context(), req)
			sent = len(body)
			switch {
			case held && enc != "" && r.Header.Get("Content-Encoding") == "":
				// A held-out body goes as it came, compressed too.
				body = raw
				r.Header.Set("Content-Encoding", enc)
			case held, req.Sizing, unread != "":
				// A held-out conversation is not rescued from its
				// context window either: its overflows are part of the
				// comparison. Nor is a body that was not read.
			default:
				rs = &rescue{req: req, sent: len(body), header: c.Writer.Header(), out: out}
				infoFrom(r.Context()).rescue = rs
			}
		}
		if out.Status != "" {
			setHeaders(c.Writer.Header(), out)
			// Reported once the upstream has answered: a request refused
			// for its length may be rescued, and is reported as it went.
			defer func() {
				if rs != nil {
					out = rs.out
				}
				s.logOutcome(r.Context(), out)
				s.metrics.observeOutcome(keyName(r.Context()), out)
				s.record(r.Context(), out)
			}()
		}
		setBody(r, body)
		s.forward(c)
	}
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
func (s *Server) readBody(c *gin.Context) (raw []byte, ok bool) {
	r := c.Request
	rc := http.NewResponseController(c.Writer)
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout))
	raw, err := readAll(r.Body, s.opts.MaxBodyBytes, r.ContentLength)
	_ = rc.SetReadDeadline(time.Time{})
	infoFrom(r.Context()).bytesIn.Store(int64(len(raw)))
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
	return raw, true
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
