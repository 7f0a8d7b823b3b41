// Command defaultproxy is the load benchmark's floor: the standard library's
// reverse proxy as anyone would first write it, httputil.NewSingleHostReverseProxy
// with its default transport behind plain http.Serve, with no tuning at all.
// The tuned bare proxy (../bareproxy) is set up like focusgate and so cannot
// show what focusgate's own settings cost; this one can.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8082", "listen address")
	upstream := flag.String("upstream", "", "base URL that request paths are joined onto (required)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *upstream); err != nil {
		fmt.Fprintf(os.Stderr, "defaultproxy: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, upstream string) error {
	target, err := url.Parse(upstream)
	if err != nil || target.Host == "" {
		return fmt.Errorf("-upstream %q: want an absolute URL", upstream)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// Closing the listener on a signal is the only addition: it lets the
	// benchmark stop this process and tell a clean exit from a crash.
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	err = http.Serve(ln, httputil.NewSingleHostReverseProxy(target))
	if ctx.Err() != nil && errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
