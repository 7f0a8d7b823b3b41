package proxy

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// healthz says the process is alive: it answers as long as it can serve HTTP.
func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz says whether to send traffic here. It fails only while draining for
// shutdown; dependencies such as Redis are reported but never make the gateway
// unready, because it serves (uncached) without them.
func (s *Server) readyz(c *gin.Context) {
	checks := make(map[string]string, len(s.opts.Checks))
	for name, check := range s.opts.Checks {
		if err := check(); err != nil {
			checks[name] = "down: " + err.Error()
		} else {
			checks[name] = "ok"
		}
	}
	if s.draining.Load() {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "draining", "checks": checks})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "checks": checks})
}
