// Command bareproxy is the load benchmark's baseline: workload.BareProxy
// behind an http.Server set up like focusgate's, with nothing else (no
// routing, no body inspection, no logging). loadbench runs it as a child
// process, as it runs focusgate, so that the two are measured alike.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/focusgate/focusgate/bench/workload"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address")
	upstream := flag.String("upstream", "", "base URL that request paths are joined onto (required)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *upstream); err != nil {
		fmt.Fprintf(os.Stderr, "bareproxy: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, upstream string) error {
	target, err := url.Parse(upstream)
	if err != nil || target.Host == "" {
		return fmt.Errorf("-upstream %q: want an absolute URL", upstream)
	}
	// The settings of focusgate's server (cmd/focusgate/serve.go).
	srv := &http.Server{
		Handler:           workload.BareProxy(target),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
