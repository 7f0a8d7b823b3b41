package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/focusgate/focusgate"
)

// Upstream is where one provider's requests go, and the gateway's
// credential there.
type Upstream struct {
	// URL is where its requests go, request paths joined onto it. It may
	// hold the provider's variables, which the provider's Resolve fills in
	// for each request (Vertex AI's location); empty means its
	// declaration's default.
	URL string
	// Signer puts the gateway's credential on what is sent there: a static
	// key, an AWS SigV4 signature, a Google access token. Nil, or not
	// ready: the client's own credential travels.
	Signer focusgate.Signer
	// ClientFirst says that, without gateway keys, a client that sends a
	// credential of its own keeps it: the gateway's static key serves only
	// clients that send none. Cloud credentials always replace the
	// client's.
	ClientFirst bool
	// Models maps the names its routes give models to model names
	// (Azure's deployments).
	Models map[string]string
}

// upstream is an Upstream with its URL parsed, when it holds no variable.
type upstream struct {
	Upstream
	base *url.URL
	err  error // why base could not be parsed
}

// upstreams completes Options.Upstreams for every provider: a provider not
// named goes to its declaration's default URL, with no credential of the
// gateway's.
func upstreams(opts Options) map[string]*upstream {
	ups := map[string]*upstream{}
	for _, p := range focusgate.Providers {
		up := &upstream{Upstream: opts.Upstreams[p.Name]}
		if up.URL == "" {
			up.URL = p.URL.Default
		}
		if !strings.Contains(up.URL, "{") && up.URL != "" {
			up.base, up.err = url.Parse(up.URL)
		}
		ups[p.Name] = up
	}
	return ups
}

// errNoUpstream answers a request whose provider has no upstream to send it
// to.
var errNoUpstream = errors.New("focusgate: the upstream URL is not valid")

// target is where a request of match m goes: its provider's URL, with the
// variables its route names filled in.
func (s *Server) target(m focusgate.Match) (*url.URL, error) {
	up := s.upstreams[m.Provider.Name]
	if up.base != nil || up.err != nil {
		return up.base, up.err
	}
	raw := up.URL
	if m.Provider.Resolve != nil {
		var err error
		if raw, err = m.Provider.Resolve(raw, m.Vars); err != nil {
			return nil, err
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || strings.Contains(raw, "{") {
		return nil, errNoUpstream
	}
	return u, nil
}

// refuseTarget answers a request that target found nowhere to send.
func refuseTarget(w http.ResponseWriter, err error) {
	var ue *focusgate.URLError
	if errors.As(err, &ue) {
		writeError(w, ue.Status, ue.Message, "invalid_request_error", "no_upstream")
		return
	}
	writeError(w, http.StatusBadGateway, errNoUpstream.Error(), "upstream_error", "no_upstream")
}

// model is the model a request's path names, as its provider's settings
// name it (an Azure deployment's model), or "" when its path names none.
func (s *Server) model(m focusgate.Match) string {
	model := m.Model()
	if mapped, ok := s.upstreams[m.Provider.Name].Models[model]; ok {
		return mapped
	}
	return model
}

// authorize puts the gateway's credential for provider p on out, whose
// headers and body are final, in place of the client's: a static key only
// for a client that sends none of its own (unless gateway keys are
// configured, whose key authenticate took out), cloud credentials always.
// Without a credential of the gateway's, the client's own travels.
func (s *Server) authorize(ctx context.Context, out *http.Request, p *focusgate.Provider, body []byte) error {
	up := s.upstreams[p.Name]
	if up.Signer == nil || !up.Signer.Ready(ctx) {
		return nil
	}
	if up.ClientFirst && s.opts.Keys == nil && p.HasCredential(out) {
		return nil
	}
	return up.Signer.Sign(ctx, out, body)
}

// signs says whether the gateway signs what it sends to p with a credential
// that covers the body (cloud credentials): a request passing through is
// then read whole, to be signed.
func (s *Server) signs(ctx context.Context, p *focusgate.Provider) bool {
	up := s.upstreams[p.Name]
	return up.Signer != nil && !up.ClientFirst && up.Signer.Ready(ctx)
}

// clientSigned says whether r is signed by its client with AWS SigV4 while
// the gateway has no credential to sign it again: its body cannot change
// without breaking the signature, so it goes as it came.
func (s *Server) clientSigned(ctx context.Context, r *http.Request, p *focusgate.Provider) bool {
	if p.Cloud != focusgate.CloudSigV4 || s.signs(ctx, p) {
		return false
	}
	return strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
}

// route finds the request's provider and inspected route in the providers'
// declarations (focusgate.MatchRequest) and marks the request with them, for
// the rest of the handler chain, the access log, the metrics and the reverse
// proxy.
func (s *Server) route(c *gin.Context) {
	m := focusgate.MatchRequest(c.Request)
	infoFrom(c.Request.Context()).match = m
	speak(c, m.Provider)
}

// serveProxied inspects a request on one of the providers' routes and
// passes every other one through.
func (s *Server) serveProxied(c *gin.Context) {
	m := infoFrom(c.Request.Context()).match
	base, err := s.target(m)
	if err != nil {
		refuseTarget(c.Writer, err)
		return
	}
	switch {
	case m.Route != nil:
		s.inspect(c, m, base)
	case s.signs(c.Request.Context(), m.Provider):
		s.passSigned(c, m, base)
	default:
		s.passthrough(c)
	}
}

// shapedWriter carries a request's provider to the code that writes
// focusgate's own errors, which only has the ResponseWriter in hand.
type shapedWriter struct {
	gin.ResponseWriter
	provider *focusgate.Provider
}

// Unwrap lets http.ResponseController reach the connection.
func (w *shapedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// speak marks the request's writer with its provider, for the rest of the
// handler chain and the reverse proxy's error handler.
func speak(c *gin.Context, p *focusgate.Provider) {
	if p != focusgate.DefaultProvider {
		c.Writer = &shapedWriter{ResponseWriter: c.Writer, provider: p}
	}
}

// providerOfWriter is the provider whose error shape w answers in.
func providerOfWriter(w http.ResponseWriter) *focusgate.Provider {
	if sw, ok := w.(*shapedWriter); ok {
		return sw.provider
	}
	return focusgate.DefaultProvider
}

// providerOf is the provider a request speaks.
func providerOf(r *http.Request) *focusgate.Provider {
	if p := infoFrom(r.Context()).match.Provider; p != nil {
		return p
	}
	return focusgate.DefaultProvider
}
