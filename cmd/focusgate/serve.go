package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/config"
	clientkeys "github.com/focusgate/focusgate/internal/keys"
	"github.com/focusgate/focusgate/internal/logbuf"
	"github.com/focusgate/focusgate/internal/telemetry"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/proxy"
	"github.com/focusgate/focusgate/ui"
)

// The concrete types serve wires into the gateway.
var (
	_ proxy.Dashboard    = (*ui.Dashboard)(nil)
	_ focusgate.Rewriter = (*pipeline.Pipeline)(nil)
	_ proxy.Keys         = (*clientkeys.File)(nil)
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
	// Lines are written in batches (see logbuf), the last of them once
	// everything else serve defers is done.
	sink := logbuf.New(stderr)
	defer sink.Flush()
	log := newLoggerWith(cfg, sink, secrets)
	warnUnknown(log)
	clientKeys, err := openKeys(cfg, log, secrets)
	if err != nil {
		return err
	}

	tracing, stopTracing, err := telemetry.Setup(getenv, log, secrets.String)
	if err != nil {
		return err
	}
	// Spans still buffered are sent once the last request is done, within
	// the grace period: a collector that never answers must not hold the
	// process past FOCUSGATE_SHUTDOWN_TIMEOUT. When serving ends otherwise
	// (start-up failed), they get a grace period of their own.
	tracingStopped := false
	flushTraces := func(ctx context.Context) {
		if tracingStopped {
			return
		}
		tracingStopped = true
		if err := stopTracing(ctx); err != nil {
			log.Warn("could not send the last traces within the grace period", "err", err)
		}
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
		defer cancel()
		flushTraces(ctx)
	}()
	pr, err := newPruning(cfg, getenv, cfg.Open(), log)
	if err != nil {
		return err
	}
	defer pr.Close()
	upstreams := map[string]proxy.Upstream{}
	for _, p := range focusgate.Providers {
		up := cfg.Upstream(p)
		upstreams[p.Name] = proxy.Upstream{URL: up.URL, Signer: pr.signers[p.Name], ClientFirst: up.Key != "", Models: up.Models}
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	checks := map[string]proxy.Check{}
	var redisStats func() focusgate.RedisStats
	if pr.redis != nil {
		checks["redis"] = pr.redis.Status
		redisStats = pr.redis.Stats
	}

	split := newHoldout(cfg, registry, pr.prices, log)
	var dashboard proxy.Dashboard
	if cfg.UI {
		dashboard = ui.New(ui.Options{
			Holdout:     split.report(),
			Capture:     cfg.UICapture,
			MaxRequests: cfg.UIMaxRequests,
			MaxBytes:    cfg.UIMaxBytes,
			AdminKey:    cfg.AdminKey,
			Logger:      log,
		})
	}
	gateway := proxy.New(proxy.Options{
		Upstreams:          upstreams,
		Keys:               gatewayKeys(clientKeys),
		UpstreamTimeout:    cfg.UpstreamTimeout,
		MaxBodyBytes:       cfg.MaxBodyBytes,
		Pipeline:           pr.pipeline,
		Tracing:            tracing,
		Memory:             pr.memory,
		Registry:           registry,
		RedisStats:         redisStats,
		RetrieversInFlight: pr.gate.InFlight,
		Checks:             checks,
		Dashboard:          dashboard,
		Holdout:            split.gateway(),
		Logger:             log,
	})
	if clientKeys != nil {
		watchKeys(ctx, cfg, clientKeys, gateway, secrets)
	}
	srv := &http.Server{
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
	// The profiler listens before the gateway says it does, so whoever waits
	// for that line can reach both.
	if cfg.PprofAddr != "" {
		if err := serveProfiler(ctx, cfg, log); err != nil {
			ln.Close()
			return err
		}
	}
	logEconomics(log, cfg, pr.prices)
	attrs := []any{"addr", ln.Addr().String()}
	for _, p := range focusgate.Providers {
		if u := cfg.Upstream(p).URL; u != "" {
			attrs = append(attrs, p.Name, config.RedactURL(u))
		}
	}
	log.Info("focusgate listening", append(attrs, "retriever", cfg.RetrieverFor(focusgate.DefaultProvider, focusgate.APIChat).Model,
		"mode", cfg.Mode, "prompt", cfg.Prompt, "cache", cacheKind(cfg), "dashboard", dashboardState(cfg), "tracing", tracing)...)
	log.Info("point agents at the gateway", agentSettings(ln.Addr(), cfg.UI)...)

	if split != nil {
		go split.Run(ctx)
		// Conversations still open count as ended when the gateway stops.
		defer split.Flush()
	}
	return gateway.Run(ctx, srv, ln, proxy.RunOptions{
		Delay:    cfg.ShutdownDelay,
		Grace:    cfg.ShutdownTimeout,
		Hurry:    hurryFrom(ctx),
		Draining: pr.pipeline.Stop,
		Stopped:  flushTraces,
	})
}

// agentSettings are the base URLs an agent on this machine is given (see
// the README's Quick start), and the dashboard's address, for the start-up
// log: a new user's first question is where to point the agent.
func agentSettings(addr net.Addr, ui bool) []any {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() || ip.IsLoopback() {
		host = "localhost"
	}
	base := "http://" + net.JoinHostPort(host, port)
	attrs := []any{"OPENAI_BASE_URL", base + "/v1", "ANTHROPIC_BASE_URL", base, "GOOGLE_GEMINI_BASE_URL", base}
	if ui {
		attrs = append(attrs, "dashboard", base+"/ui")
	}
	return attrs
}

// dashboardState says who can open /ui, for the start-up log line.
func dashboardState(cfg config.Config) string {
	switch {
	case !cfg.UI:
		return "off"
	case cfg.AdminKey == "":
		return "/ui (loopback only: set FOCUSGATE_ADMIN_KEY for other addresses)"
	}
	return "/ui (loopback, or with the admin key)"
}

// serveProfiler serves net/http/pprof at FOCUSGATE_PPROF_ADDR until ctx
// ends (config checked that it is loopback, or guarded by the admin key).
func serveProfiler(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	ln, err := net.Listen("tcp", cfg.PprofAddr)
	if err != nil {
		return fmt.Errorf("%sPPROF_ADDR: %w", config.Prefix, err)
	}
	srv := &http.Server{Handler: proxy.Profiler(cfg.AdminKey), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	log.Info("profiler listening", "addr", ln.Addr().String(), "path", "/debug/pprof/")
	return nil
}
