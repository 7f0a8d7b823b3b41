package proxy

import (
	"github.com/gin-gonic/gin"

	"github.com/focusgate/focusgate"
)

// routes builds the gin engine. Only the two inference routes are inspected;
// every other method and path falls through to the plain reverse proxy, so
// the gateway never stands between an agent and an API it does not know.
func (s *Server) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	// A transparent proxy must not answer for the upstream: no redirects for
	// trailing slashes or case, no 405s for unknown methods.
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.HandleMethodNotAllowed = false
	e.ContextWithFallback = true

	e.Use(s.accessLog, s.recoverPanics)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.serveMetrics())
	if s.opts.Dashboard != nil {
		ui := gin.WrapH(s.opts.Dashboard)
		e.Any("/ui", ui)
		e.Any("/ui/*path", ui)
	}
	// Every proxied route speaks its provider's dialect, is authenticated
	// and is confined to the upstream's base path; the own endpoints above
	// keep their own access rules.
	proxied := []gin.HandlerFunc{s.speakDialect, s.authenticate, s.checkPath}
	if s.opts.Tracing {
		proxied = append([]gin.HandlerFunc{s.traceRequest}, proxied...)
	}
	api := e.Group("", proxied...)
	for _, prefix := range []string{"/v1", ""} {
		api.POST(prefix+"/chat/completions", s.inspect(focusgate.Chat))
		api.POST(prefix+"/responses", s.inspect(focusgate.Responses))
		// count_tokens sizes a request as it would be sent: it is
		// rewritten the same way (see README, Anthropic and Claude Code).
		api.POST(prefix+"/messages", s.inspect(focusgate.Messages))
		api.POST(prefix+"/messages/count_tokens", s.inspect(focusgate.Messages))
	}
	e.NoRoute(append(proxied, s.passthrough)...)
	return e
}
