package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"

	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/prune"
)

// byteBudget admits work while the bytes it holds stay within a limit. It
// never waits: work that does not fit is not done, which for an inspection
// means the request is forwarded as it came.
type byteBudget struct {
	limit int64
	used  atomic.Int64
}

// acquire takes n bytes of the budget, or reports false when they do not fit.
func (b *byteBudget) acquire(n int64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *byteBudget) release(n int64) { b.used.Add(-n) }

// errShutdown ends the inspections still running once the server stops
// pruning for shutdown.
var errShutdown = errors.New("proxy: shutting down")

// inlineBytes is the largest body whose observations are looked for on the
// request's own goroutine. Detection of so few bytes takes well under a
// millisecond, so it needs no deadline, and a request without an observation
// (most of a gateway's traffic) then goes on without a goroutine, a timer or a
// copy of its headers.
const inlineBytes = 64 << 10

// rewriteBounded is plan and rewrite under the gateway's two bounds: the
// bytes under inspection at once (Options.InspectBudgetBytes) and the time
// focusgate may spend on a request (Options.Budget). Past the deadline, or
// once the server stops pruning for shutdown, the original body goes out at
// once.
//
// Detection cannot be interrupted, so the work runs on its own goroutine
// whose result is abandoned at the deadline. The context it runs under ends
// at the same moment, so the steps after detection (token counting, the
// retriever, waiting for another request's selection) stop at their next
// check, and the abandoned goroutine holds its share of the byte budget until
// it has returned: the work left running after a deadline is bounded by the
// budget.
func (s *Server) rewriteBounded(ctx context.Context, kind detect.API, body []byte, h http.Header) ([]byte, outcome) {
	if s.stopping.Err() != nil {
		return body, skipped("shutdown")
	}
	n := int64(len(body))
	if !s.inspecting.acquire(n) {
		return body, skipped("busy")
	}
	var p plan
	planned := false
	if n <= inlineBytes {
		b, out := s.guarded(ctx, body, func() ([]byte, outcome) {
			var out outcome
			p, out, planned = s.plan(kind, body, h)
			return body, out
		})
		if !planned {
			s.inspecting.release(n)
			return b, out
		}
	} else {
		// The goroutine may outlive this request's handler, which owns h.
		h = h.Clone()
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Budget)
	defer cancel()
	stop := context.AfterFunc(s.stopping, cancel)
	defer stop()

	type result struct {
		body []byte
		out  outcome
	}
	done := make(chan result, 1)
	go func() {
		defer s.inspecting.release(n)
		b, out := s.guarded(ctx, body, func() ([]byte, outcome) {
			if !planned {
				var out outcome
				var ok bool
				if p, out, ok = s.plan(kind, body, h); !ok {
					return body, out
				}
			}
			return s.rewrite(ctx, body, p)
		})
		done <- result{b, out}
	}()

	select {
	case r := <-done:
		return r.body, s.blame(ctx, r.out)
	case <-ctx.Done():
	}
	// A result that came in at the same moment is still good.
	select {
	case r := <-done:
		return r.body, s.blame(ctx, r.out)
	default:
	}
	return body, outcome{Status: prune.FailedOpen, Reason: s.endReason(ctx)}
}

// guarded runs f, turning a panic into a fail-open outcome: the request is
// forwarded as it came.
func (s *Server) guarded(ctx context.Context, body []byte, f func() ([]byte, outcome)) (b []byte, out outcome) {
	defer func() {
		if v := recover(); v != nil {
			s.logPanic(ctx, v)
			b, out = body, outcome{Status: prune.FailedOpen, Reason: "internal-error"}
		}
	}()
	return f()
}

func (s *Server) logPanic(ctx context.Context, v any) {
	s.log.LogAttrs(ctx, slog.LevelError, "panic inspecting a request; forwarded as it came",
		slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
}

// blame names the real cause of an inspection that failed open because its
// context ended: the work itself only sees a cancelled context, which the
// deadline, the shutdown and a client that left all look like.
func (s *Server) blame(ctx context.Context, out outcome) outcome {
	if out.Status == prune.FailedOpen && (out.Reason == "canceled" || out.Reason == "timeout") && ctx.Err() != nil {
		out.Reason = s.endReason(ctx)
	}
	return out
}

// endReason says why ctx, an inspection's context, ended.
func (s *Server) endReason(ctx context.Context) string {
	switch {
	case s.stopping.Err() != nil:
		return "shutdown"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timeout"
	default:
		return "canceled"
	}
}

// StopPruning makes the gateway forward every request from now on without
// waiting for a selection: inspections in progress give up and send the
// original (failed-open; reason=shutdown), later ones are skipped
// (skipped; reason=shutdown). Call it when the server stops accepting
// connections, so that the grace period is left to the upstream's answers
// rather than spent waiting for the retriever.
func (s *Server) StopPruning() {
	s.stop(errShutdown)
}

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
