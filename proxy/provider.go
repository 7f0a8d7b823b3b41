package proxy

import (
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/focusgate/focusgate"
)

// Upstream is where one provider's requests go, and the key focusgate sends
// there in the client's place (see finishCredentials).
type Upstream struct {
	URL    *url.URL
	APIKey string
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
	if m := infoFrom(c.Request.Context()).match; m.Route != nil {
		s.inspectors[m.Route.API](c)
		return
	}
	s.passthrough(c)
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

// upstreamFor is where the requests of provider p go.
func (s *Server) upstreamFor(p *focusgate.Provider) Upstream {
	return s.upstreams[p.Name]
}
