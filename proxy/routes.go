package proxy

import (
	"slices"

	"github.com/gin-gonic/gin"
)

// routes builds the gin engine. Only the providers' inference routes are
// inspected; every other method and path falls through to the plain reverse
// proxy, so the gateway never stands between an agent and an API it does not
// know.
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
		ui := func(c *gin.Context) {
			// The dashboard shows every request answered before it asked.
			s.Flush()
			s.opts.Dashboard.ServeHTTP(c.Writer, c.Request)
		}
		e.Any("/ui", ui)
		e.Any("/ui/*path", ui)
	}
	// Every proxied request speaks a provider's API, is authenticated
	// and is confined to the upstream's base path; the own endpoints above
	// keep their own access rules. The providers' routes are matched by
	// s.route from their declarations rather than by gin, whose ":param"
	// syntax cannot express Gemini's ".../models/{model}:generateContent".
	proxied := []gin.HandlerFunc{s.route, s.authenticate, s.checkPath, s.serveProxied}
	if s.opts.Tracing {
		proxied = slices.Insert(proxied, 1, gin.HandlerFunc(s.traceRequest))
	}
	e.NoRoute(proxied...)
	return e
}
