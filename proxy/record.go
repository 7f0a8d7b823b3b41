package proxy

import (
	"context"
	"net/http"

	"github.com/focusgate/focusgate"
)

// Dashboard serves /ui and is told about every inspected request;
// *ui.Dashboard is the implementation.
type Dashboard interface {
	http.Handler
	focusgate.Observer
}

// record reports out to the dashboard, if there is one.
func (s *Server) record(ctx context.Context, out focusgate.Outcome) {
	if s.opts.Dashboard == nil {
		return
	}
	key := ""
	if s.opts.Keys != nil {
		key = keyName(ctx)
	}
	s.opts.Dashboard.Observe(key, out)
}
