package proxy

import (
	"bytes"
	"io"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/focusgate/focusgate"
)

// maxRefusalBytes caps what is read of a 400 answer to tell whether it
// refuses the request for its length. Providers' refusals are a few hundred
// bytes; a longer answer is passed on unread.
const maxRefusalBytes = 64 << 10

// rescue is what an inspected request needs if the upstream refuses it for
// its length: the body as the client sent it (decoded), the settings it came
// with, and where the client's answer headers are. It travels in the
// request's context (requestInfo.rescue); the transport fills in the result.
type rescue struct {
	req    focusgate.Request
	sent   int         // bytes of the body the first attempt sent
	header http.Header // the client's response headers, set before the answer is written
	out    focusgate.Outcome
}

// rescueTransport retries once a request the upstream refused as longer
// than its model's context window, with every page of the conversation
// pruned (see focusgate.Request.Rescue). The refusal is read before any byte
// of it reaches the client, so the client gets either the retry's answer,
// streamed as usual, or the refusal exactly as the upstream sent it: when the
// pruned request is refused again, or there is nothing more to prune. No
// other status, and no other 400, is retried.
type rescueTransport struct {
	next     http.RoundTripper
	pipeline focusgate.Rewriter
}

var _ http.RoundTripper = rescueTransport{}

func (t rescueTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	rs := infoFrom(req.Context()).rescue
	if err != nil || rs == nil || resp.StatusCode != http.StatusBadRequest {
		return resp, err
	}
	refusal, complete := readRefusal(resp)
	if !complete || !overflow(rs.req.API, resp, refusal) {
		return resp, nil
	}
	defer func() { setHeaders(rs.header, rs.out) }()
	if rs.out.Rescue != "" {
		// Already sent with every page pruned (the window table foresaw
		// it): there is nothing more to try.
		rs.refused(focusgate.RescueStillTooLong, focusgate.Outcome{})
		return resp, nil
	}

	ctx, span := tracer.Start(req.Context(), "focusgate.rescue", trace.WithAttributes(
		attribute.String("focusgate.api", rs.req.API.String())))
	defer func() {
		span.SetAttributes(attribute.String("focusgate.rescue", string(rs.out.Rescue)))
		span.End()
	}()
	r := rs.req
	r.Rescue = true
	body, out := t.pipeline.Rewrite(ctx, r)
	if out.Rescue != focusgate.RescueRescued || len(body) >= rs.sent {
		rs.refused(focusgate.RescueNothingToPrune, out)
		return resp, nil
	}
	retry := req.Clone(ctx)
	setBody(retry, body)
	second, err := t.next.RoundTrip(retry)
	if err != nil {
		// The refusal is the upstream's own answer to this request; a
		// retry that could not be made changes nothing of it.
		rs.refused(focusgate.RescueStillTooLong, out)
		return resp, nil
	}
	if second.StatusCode == http.StatusBadRequest {
		again, complete := readRefusal(second)
		if complete && overflow(rs.req.API, second, again) {
			second.Body.Close()
			rs.refused(focusgate.RescueStillTooLong, out)
			return resp, nil
		}
	}
	resp.Body.Close()
	rs.keep(out)
	return second, nil
}

// keep makes out, a rescue's outcome, the request's outcome (see
// focusgate.Outcome.Retried).
func (rs *rescue) keep(out focusgate.Outcome) {
	rs.out = out.Retried(rs.out)
}

// refused records a rescue that ended with the upstream's refusal going to
// the client (see focusgate.Outcome.Refused).
func (rs *rescue) refused(result focusgate.Rescue, spent focusgate.Outcome) {
	rs.out = rs.out.Refused(result, spent)
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

// overflow says whether resp, an answer of api's upstream whose body is
// body, refuses the request as longer than the model's context window, in
// that provider's words. A compressed answer (the client asked for one with
// Accept-Encoding) is read decoded, within maxRefusalBytes; what goes to the
// client is body as it came.
func overflow(api focusgate.API, resp *http.Response, body []byte) bool {
	p := focusgate.ProviderOf(api)
	if p == nil || p.ContextOverflow == nil {
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
