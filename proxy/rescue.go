package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/focusgate/focusgate"
)

// maxRefusalBytes caps what is read of a 400 answer to tell whether it
// refuses the request for its length. Providers' refusals are a few hundred
// bytes; a longer answer is passed on unread.
const maxRefusalBytes = 64 << 10

// rescue retries once a request the upstream refused as longer than its
// model's context window (resp), with every page of the conversation pruned
// (see focusgate.Request.Rescue), and returns the answer for the client and
// the request's outcome. The refusal is read before any byte of it reaches
// the client, so the client gets either the retry's answer, streamed as
// usual, or the refusal exactly as the upstream sent it: when the pruned
// request is refused again, or there is nothing more to prune. No other
// status, and no other 400, is retried. sent is the size of the body the
// first attempt sent; held holds the body the client sent.
func (s *Server) rescue(ctx context.Context, in *http.Request, dest *url.URL, req focusgate.Request, held *heldBody, resp *http.Response, sent int, out focusgate.Outcome) (*http.Response, focusgate.Outcome) {
	if resp.StatusCode != http.StatusBadRequest {
		return resp, out
	}
	refusal, complete := readRefusal(resp)
	if !complete || !overflow(req.Provider, resp, refusal) {
		return resp, out
	}
	if out.Rescue != "" {
		// Already sent with every page pruned (the window table foresaw
		// it): there is nothing more to try.
		return resp, out.Refused(focusgate.RescueStillTooLong, focusgate.Outcome{})
	}
	ctx, span := tracer.Start(ctx, "focusgate.rescue", trace.WithAttributes(
		attribute.String("focusgate.api", req.API.String()), attribute.String("focusgate.provider", req.Provider.Name)))
	result := focusgate.RescueStillTooLong
	defer func() {
		span.SetAttributes(attribute.String("focusgate.rescue", string(result)))
		span.End()
	}()
	req.Rescue = true
	body, second := s.opts.Pipeline.Rewrite(ctx, req)
	if second.Rescue != focusgate.RescueRescued || len(body) >= sent {
		result = focusgate.RescueNothingToPrune
		return resp, out.Refused(result, second)
	}
	forward := held
	if rewritten(body, req.Body) {
		forward = holding(body)
		defer forward.Release()
	}
	// The first request may have gone compressed, as it came; the
	// rescued body is the decoded one, pruned.
	in.Header.Del("Content-Encoding")
	retry, err := s.send(ctx, in, dest, req.Provider, body, forward)
	if err != nil {
		// The refusal is the upstream's own answer to this request; a
		// retry that could not be made changes nothing of it.
		return resp, out.Refused(result, second)
	}
	if retry.StatusCode == http.StatusBadRequest {
		again, complete := readRefusal(retry)
		if complete && overflow(req.Provider, retry, again) {
			retry.Body.Close()
			return resp, out.Refused(result, second)
		}
	}
	resp.Body.Close()
	result = focusgate.RescueRescued
	return retry, second.Retried(out)
}

// readRefusal reads a 400 answer's body, up to maxRefusalBytes, and puts
// back a body that reads the same bytes, so that the answer can still go to
// the client unchanged. complete is false when the body was longer, or could
// not be read to its end.
func readRefusal(resp *http.Response) (body []byte, complete bool) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBytes+1))
	complete = err == nil && len(body) <= maxRefusalBytes
	if complete {
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
	} else {
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
	}
	return body, complete
}

type readCloser struct {
	io.Reader
	io.Closer
}

// overflow says whether resp, an answer of p's upstream whose body is body,
// refuses the request as longer than the model's context window, in that
// provider's words. A compressed answer (the client asked for one with
// Accept-Encoding) is read decoded, within maxRefusalBytes; what goes to the
// client is body as it came.
func overflow(p *focusgate.Provider, resp *http.Response, body []byte) bool {
	if p.ContextOverflow == nil {
		return false
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" {
		decoded, _, err := decode(body, enc, maxRefusalBytes, nil)
		if err != nil {
			return false
		}
		body = decoded
	}
	return p.ContextOverflow(resp.StatusCode, body)
}
