package proxy

import (
	"context"
	"net/http"

	"github.com/focusgate/focusgate/pipeline"
)

// Dashboard serves /ui and is told about every inspected request;
// *ui.Dashboard is the implementation. Observe is called on the request's
// path and must return at once.
type Dashboard interface {
	http.Handler
	// Observe records what the pipeline did to one request, sent with the
	// gateway key named key ("" without gateway keys). The outcome refers
	// to the request's own memory: the dashboard copies what it keeps.
	Observe(key string, out pipeline.Outcome)
}

// record reports out to the dashboard, if there is one.
func (s *Server) record(ctx context.Context, out pipeline.Outcome) {
	if s.opts.Dashboard == nil {
		return
	}
	key := ""
	if s.opts.Keys != nil {
		key = keyName(ctx)
	}
	s.opts.Dashboard.Observe(key, out)
}
