package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// RunOptions say how Run serves the gateway and how it stops.
type RunOptions struct {
	// Delay is how long readiness fails, while new connections are still
	// served, before the listener closes (FOCUSGATE_SHUTDOWN_DELAY): load
	// balancers stop sending traffic before it would be refused.
	Delay time.Duration
	// Grace bounds the drain: in-flight requests and open streams get this
	// long, from the stop signal, before their connections are closed
	// (FOCUSGATE_SHUTDOWN_TIMEOUT).
	Grace time.Duration
	// Hurry ends the grace period at once when it ends (a second signal);
	// nil never does.
	Hurry context.Context
	// Draining is called once the delay is over, before the listener
	// closes: the gateway stops waiting for selections (pipeline.Stop), so
	// that the grace period belongs to the upstream's answers.
	Draining func()
	// Stopped is called with what is left of the grace period once the
	// last connection is done (the last trace export, say).
	Stopped func(ctx context.Context)
}

// Run serves s on ln, through srv (whose Handler it sets), until ctx ends,
// then drains: readiness fails first (Drain), after opts.Delay the listener
// closes and requests finish within opts.Grace, and connections still open
// after it are closed. It returns nil after a clean stop, and the server's
// error when serving ended otherwise.
func (s *Server) Run(ctx context.Context, srv *http.Server, ln net.Listener, opts RunOptions) error {
	srv.Handler = s
	ln = Harden(srv, ln)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	s.Drain()
	s.log.Info("shutting down: draining in-flight requests", "delay", opts.Delay, "grace", opts.Grace)
	graceCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.Grace)
	defer cancel()
	hurry := opts.Hurry
	if hurry == nil {
		hurry = context.Background()
	}
	defer context.AfterFunc(hurry, cancel)()
	delay := time.NewTimer(opts.Delay)
	defer delay.Stop()
	select {
	case <-delay.C:
	case <-graceCtx.Done():
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	}
	if opts.Draining != nil {
		opts.Draining()
	}
	if err := srv.Shutdown(graceCtx); err != nil {
		if hurry.Err() != nil {
			err = errors.New("a second signal ended the grace period")
		}
		s.log.LogAttrs(ctx, slog.LevelWarn, "grace period over: closing the remaining connections", slog.Any("err", err))
		_ = srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	s.Flush()
	if opts.Stopped != nil {
		opts.Stopped(graceCtx)
	}
	s.log.Info("focusgate stopped")
	return nil
}
