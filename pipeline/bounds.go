package pipeline

import (
	"context"
	"errors"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/internal/budget"
)

// inlineBytes is the largest body whose observations are looked for on the
// caller's own goroutine. Detection of so few bytes takes well under a
// millisecond, so it needs no deadline, and a request without an observation
// (most of a gateway's traffic) then goes on without a goroutine or a timer.
const inlineBytes = 64 << 10

// Rewrite returns the body to forward for req and what was done to it. It
// never fails: whatever it cannot handle leaves the body as it came. A body
// the gateway could not read (req.Unread) is returned as it came, skipped
// for that reason.
//
// It works under two bounds: the bytes under inspection at once
// (Options.InspectBudgetBytes) and the time it may spend on a request
// (Options.Budget). Past the deadline, or once Stop was called, the original
// body is returned at once.
//
// Detection cannot be interrupted, so the work runs on its own goroutine
// whose result is abandoned at the deadline. The context it runs under ends
// at the same moment, so the steps after detection (token counting, the
// retriever, waiting for another request's selection) stop at their next
// check, and the abandoned goroutine holds its share of the byte budget until
// it has returned: the work left running after a deadline is bounded by the
// budget.
func (p *Pipeline) Rewrite(ctx context.Context, req focusgate.Request) ([]byte, focusgate.Outcome) {
	body, out := req.Body, skipped(req.Unread)
	if req.Unread == "" {
		body, out = p.rewriteBounded(ctx, req)
	}
	out.API = req.API
	out.Provider = focusgate.DefaultProvider.Name
	if req.Provider != nil {
		out.Provider = req.Provider.Name
	}
	if out.Model == "" {
		out.Model = req.Model
		if out.Model == "" && req.WantModel && req.Unread == "" {
			out.Model = modelOf(req, detect.Model(req.Body))
		}
	}
	return body, out
}

func (p *Pipeline) rewriteBounded(ctx context.Context, req focusgate.Request) ([]byte, focusgate.Outcome) {
	body := req.Body
	if p.stopping.Err() != nil {
		return body, skipped(focusgate.ReasonShutdown)
	}
	// The tab holds the body's bytes, and what detection holds beyond them
	// as it grows, until the work is done.
	tab := p.inspecting.Open()
	if !tab.Acquire(int64(len(body))) {
		return body, skipped(focusgate.ReasonBusy)
	}
	var pl plan
	planned := false
	if len(body) <= inlineBytes {
		b, out := p.guarded(ctx, body, func() ([]byte, focusgate.Outcome) {
			var out focusgate.Outcome
			pl, out, planned = p.plan(ctx, req, tab)
			return body, out
		})
		if !planned {
			tab.Close()
			return b, out
		}
	}
	return p.rewriteAside(ctx, req, tab, pl, planned)
}

// rewriteAside does the rest of rewriteBounded's work on a worker of its
// own (aside), under the time budget: the plan, unless planned, and the rewrite. It
// is a function of its own because a request its worker captures is
// moved to the heap, and the requests that never get here (a passthrough, a
// busy skip) should not pay for that.
func (p *Pipeline) rewriteAside(ctx context.Context, req focusgate.Request, tab *budget.Tab, pl plan, planned bool) ([]byte, focusgate.Outcome) {
	body := req.Body
	ctx, cancel := context.WithTimeout(ctx, p.opts.Budget)
	defer cancel()
	stop := context.AfterFunc(p.stopping, cancel)
	defer stop()

	type result struct {
		body []byte
		out  focusgate.Outcome
	}
	done := make(chan result, 1)
	if req.Holder != nil {
		req.Holder.Hold()
	}
	aside.run(func() {
		if req.Holder != nil {
			defer req.Holder.Release()
		}
		b, out := p.guarded(ctx, body, func() ([]byte, focusgate.Outcome) {
			if !planned {
				var out focusgate.Outcome
				var ok bool
				if pl, out, ok = p.plan(ctx, req, tab); !ok {
					return body, out
				}
			}
			return p.rewrite(ctx, body, pl)
		})
		// The budget is released before the result is handed back, so a
		// caller that has its answer finds the memory free again; guarded
		// has recovered any panic, so this line always runs.
		tab.Close()
		done <- result{b, out}
	})

	select {
	case r := <-done:
		return r.body, p.blame(ctx, r.out)
	case <-ctx.Done():
	}
	// A result that came in at the same moment is still good.
	select {
	case r := <-done:
		return r.body, p.blame(ctx, r.out)
	default:
	}
	return body, focusgate.Outcome{Status: focusgate.StatusFailedOpen, Reason: p.endReason(ctx)}
}

// guarded runs f, turning a panic into a fail-open outcome: the request is
// forwarded as it came.
func (p *Pipeline) guarded(ctx context.Context, body []byte, f func() ([]byte, focusgate.Outcome)) (b []byte, out focusgate.Outcome) {
	defer func() {
		if v := recover(); v != nil {
			p.logPanic(ctx, v)
			b, out = body, focusgate.Outcome{Status: focusgate.StatusFailedOpen, Reason: focusgate.ReasonInternalError}
		}
	}()
	return f()
}

// blame names the real cause of an inspection that failed open because its
// context ended: the work itself only sees a cancelled context, which the
// deadline, the shutdown and a client that left all look like.
func (p *Pipeline) blame(ctx context.Context, out focusgate.Outcome) focusgate.Outcome {
	if out.Status == focusgate.StatusFailedOpen && (out.Reason == focusgate.ReasonCanceled || out.Reason == focusgate.ReasonTimeout) && ctx.Err() != nil {
		out.Reason = p.endReason(ctx)
	}
	return out
}

// endReason says why ctx, an inspection's context, ended.
func (p *Pipeline) endReason(ctx context.Context) focusgate.Reason {
	switch {
	case p.stopping.Err() != nil:
		return focusgate.ReasonShutdown
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return focusgate.ReasonTimeout
	default:
		return focusgate.ReasonCanceled
	}
}
