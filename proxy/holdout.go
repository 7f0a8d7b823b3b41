package proxy

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/usage"
)

// recordStep tells the holdout how one step of a conversation went, once its
// response has been copied to the client (or has failed). Sizing requests
// (count_tokens) are no step.
func (s *Server) recordStep(r *http.Request, t focusgate.Ticket, out focusgate.Outcome, sent int, status int, meter *usage.Meter) {
	info := infoFrom(r.Context())
	if info.clientGone.Load() {
		status = focusgate.StatusClientGone
	}
	step := focusgate.Step{
		Model:        t.Model,
		Agent:        s.agentName(r),
		Repeat:       out.Repeated,
		RetrieverUSD: out.RetrieverUSD,
		SentBytes:    sent,
		Status:       status,
	}
	// The pipeline's model is the one the upstream reads: the route's
	// (Gemini's, the clouds'), else the last of the body's duplicate
	// members, where the ticket has the first.
	if out.Model != "" {
		step.Model = out.Model
	}
	step.Usage = focusgate.UpstreamUsage(meter.Usage())
	s.opts.Holdout.Record(t, step)
}

// agentName says who sent a request, for the per-agent comparison: the
// gateway key's name when keys are configured, else the product of the
// client's User-Agent ("claude-cli/2.0.8 (external, cli)" is claude-cli),
// copied out of the header and cut to focusgate.MaxNameBytes: the holdout
// keeps it while the conversation is open, and a header may hold a
// megabyte.
func (s *Server) agentName(r *http.Request) string {
	if s.opts.Keys != nil {
		return keyName(r.Context())
	}
	ua := strings.TrimSpace(r.Header.Get("User-Agent"))
	if i := strings.IndexAny(ua, "/ ("); i >= 0 {
		ua = ua[:i]
	}
	return focusgate.ClientName(ua)
}

// meter is resp's body, its usage report read by m as it streams to the
// client.
func (s *Server) meter(resp *http.Response, m *usage.Meter) io.ReadCloser {
	m.SetContentType(resp.Header.Get("Content-Type"))
	return &meteredBody{ReadCloser: resp.Body, meter: m, encoding: resp.Header.Get("Content-Encoding"), limit: s.opts.MaxBodyBytes}
}

// maxMeteredCompressed bounds the compressed response bytes kept to read the
// usage report of once the response is whole; a larger response is counted
// with focusgate's estimate.
const maxMeteredCompressed = 4 << 20

// meteredBody hands a response's bytes to a meter as they are read. A
// compressed response is kept (up to maxMeteredCompressed) and decoded once
// whole, after the client has it.
type meteredBody struct {
	io.ReadCloser
	meter      *usage.Meter
	encoding   string
	limit      int64
	compressed []byte
	tooLarge   bool
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case b.encoding == "" || strings.EqualFold(b.encoding, "identity"):
		_, _ = b.meter.Write(p[:n])
	case !b.tooLarge && len(b.compressed)+n <= maxMeteredCompressed:
		b.compressed = append(b.compressed, p[:n]...)
	default:
		b.tooLarge, b.compressed = true, nil
	}
	if err == io.EOF && b.compressed != nil {
		if r, closeAll, derr := decoder(bytes.NewReader(b.compressed), b.encoding, b.limit); derr == nil {
			_, _ = io.Copy(b.meter, io.LimitReader(r, b.limit))
			closeAll()
		}
		b.compressed = nil
	}
	return n, err
}
