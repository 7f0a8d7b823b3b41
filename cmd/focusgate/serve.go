package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/config"
	"github.com/focusgate/focusgate/proxy"
	"github.com/focusgate/focusgate/prune"
)

func cacheKind(cfg config.Config) string {
	if cfg.RedisURL == "" {
		return "memory"
	}
	return "redis"
}

// serve runs the gateway until ctx ends (SIGINT/SIGTERM), then drains:
// in-flight requests and open streams get FOCUSGATE_SHUTDOWN_TIMEOUT to
// finish before their connections are closed.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, _, err := parseFlags("serve", "[serve] [flags]\n(other commands: prune, eval; run \"focusgate help\")", args, getenv, stdout, nil)
	if err != nil {
		return err
	}
	secrets := newRedactor(cfg)
	log := newLoggerWith(cfg, stderr, secrets)
	clientKeys, err := openKeys(cfg, log, secrets)
	if err != nil {
		return err
	}
	upstream, err := url.Parse(cfg.UpstreamURL)
	if err != nil {
		return fmt.Errorf("upstream URL: %w", err)
	}

	prices, err := loadPrices(cfg)
	if err != nil {
		return err
	}
	pr, err := newPruning(cfg, log)
	if err != nil {
		return err
	}
	defer pr.Close()
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	checks := map[string]proxy.Check{}
	var redisStats func() cache.RedisStats
	if pr.redis != nil {
		checks["redis"] = pr.redis.Status
		redisStats = pr.redis.Stats
	}

	gateway := proxy.New(proxy.Options{
		Upstream:          upstream,
		UpstreamAPIKey:    cfg.UpstreamAPIKey,
		Keys:              gatewayKeys(clientKeys),
		UpstreamTimeout:   cfg.UpstreamTimeout,
		MaxBodyBytes:      cfg.MaxBodyBytes,
		Pruner:            pr.pruner,
		Mode:              prune.Mode(cfg.Mode),
		Variant:           prune.Variant(cfg.Prompt),
		PruneAll:          cfg.PruneAll,
		Prices:            prices,
		RetrieverModel:    cfg.RetrieverModel,
		SkipUneconomic:    cfg.SkipUneconomic,
		ExpectedReduction: cfg.ExpectedReduction,
		Registry:          registry,
		RedisStats:        redisStats,
		Checks:            checks,
		Logger:            log,
	})
	if clientKeys != nil {
		watchKeys(ctx, cfg, clientKeys, gateway, secrets)
	}
	srv := &http.Server{
		Handler: gateway,
		// Only the header read is bounded here: read and write timeouts
		// would cut long streams. Bodies are bounded by the gateway itself.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ln = proxy.Harden(srv, ln)
	logEconomics(log, cfg, prices)
	log.Info("focusgate listening", "addr", ln.Addr().String(), "upstream", config.RedactURL(cfg.UpstreamURL),
		"retriever", cfg.RetrieverModel, "mode", cfg.Mode, "prompt", cfg.Prompt, "cache", cacheKind(cfg))

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	log.Info("shutting down: draining in-flight requests", "grace", cfg.ShutdownTimeout)
	gateway.Drain()
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		log.Warn("grace period over: closing the remaining connections", "err", err)
		_ = srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("focusgate stopped")
	return nil
}
