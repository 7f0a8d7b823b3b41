package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/focusgate/focusgate/config"
)

// health answers `focusgate health`: it asks a running gateway's /healthz and
// returns an error (exit status 1) unless it answers 200. The image is
// distroless, without a shell, curl or wget, so a container healthcheck
// (docker compose's, or any orchestrator's exec probe) runs the binary it
// already has.
func health(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", healthURL(getenv(config.Prefix+"ADDR")), "the gateway's /healthz (default: loopback at the port of "+config.Prefix+"ADDR)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: focusgate health [--url URL] [--timeout D]\n\nExits 0 when the gateway answers its health check, 1 otherwise.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("health takes no arguments, got %q", fs.Args())
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", *url, resp.Status)
	}
	fmt.Fprintf(stdout, "ok: %s\n", *url)
	return nil
}

// healthURL is the /healthz of a gateway listening on addr, reached from the
// same host: an address that listens on every interface (":8080",
// "0.0.0.0:8080", "[::]:8080") is asked on loopback.
func healthURL(addr string) string {
	if addr == "" {
		addr = ":8080"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://127.0.0.1:8080/healthz"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz"
}
