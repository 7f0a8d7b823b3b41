// Package proxy is focusgate's HTTP face: a transparent reverse proxy for the
// APIs of the declared providers (focusgate.Providers) that reads and decodes
// the bodies of their inspected routes under their limits, hands them to the request
// pipeline (package pipeline) and forwards what it returns, streaming the
// upstream's answer back untouched. Every other request passes through as it
// came. Routes, authentication, headers, errors, metrics and the access log
// live here; nothing about pages does.
package proxy

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/budget"
	"github.com/focusgate/focusgate/internal/later"
)

// Options configure a Server. Every field has a default; a gateway for an
// OpenAI-compatible server sets at least the "openai" entry of Upstreams.
type Options struct {
	// Upstreams are where each provider's requests go, by provider name
	// (focusgate.Provider.Name). A provider not named goes to its
	// declaration's default URL, without a credential of the gateway's.
	Upstreams map[string]Upstream
	// Keys, when set, are the gateway keys a client must present on every
	// proxied route; nil leaves the gateway open (see authenticate).
	Keys Keys
	// UpstreamTimeout bounds the wait for the upstream's response headers.
	UpstreamTimeout time.Duration
	// MaxBodyBytes caps request bodies, after decompression.
	MaxBodyBytes int64
	// BodyReadTimeout bounds how long a client may take to send its body,
	// on every route; it keeps slow clients from holding memory and
	// upstream connections.
	BodyReadTimeout time.Duration
	// Transport carries requests upstream; nil builds one from the timeouts above.
	Transport http.RoundTripper
	// Tracing makes a server span of every proxied request and a client span
	// of its upstream call, with OpenTelemetry's global tracer and
	// propagator (see internal/telemetry); off, requests pass untraced and
	// their trace headers untouched.
	Tracing bool
	// Pipeline rewrites the bodies of the inspected routes; nil forwards
	// every body as it came.
	Pipeline focusgate.Rewriter
	// Memory bounds the decoded bytes of compressed bodies held at once; the
	// pipeline's inspection shares it. Nil bounds nothing but each body's
	// own cap.
	Memory *budget.Bytes
	// Registry receives the gateway's metrics and is served on /metrics;
	// nil makes one of its own.
	Registry *prometheus.Registry
	// RedisStats, when set, exposes the Redis cache's health as metrics.
	RedisStats func() focusgate.RedisStats
	// RetrieversInFlight, when set, exposes how many retriever calls are in
	// flight across the gateway.
	RetrieversInFlight func() int64
	// Checks are reported by /readyz. They inform and never make the gateway
	// unready: a gateway whose cache is down still serves.
	Checks map[string]Check
	// Dashboard, when set, is served at /ui and told about every inspected
	// request; nil leaves /ui to the upstream like any other path.
	Dashboard Dashboard
	// Holdout, when set, puts each conversation in the pruned arm or the
	// holdout (sent whole) and accounts for both; nil prunes every
	// conversation.
	Holdout focusgate.HoldoutRecorder
	Logger  *slog.Logger
}

// Check reports the health of a dependency: nil when it is fine.
type Check func() error

// Server is the gateway's http.Handler.
type Server struct {
	opts     Options
	engine   *gin.Engine
	proxy    *httputil.ReverseProxy
	log      *slog.Logger
	metrics  *metrics
	gatherer prometheus.Gatherer
	draining atomic.Bool
	// upstreams are Options.Upstreams completed for every provider.
	upstreams map[string]*upstream
	// transport carries the requests the handler sends itself (exchange.go):
	// Options.Transport, traced when tracing is on.
	transport http.RoundTripper
	// books holds each request's bookkeeping until it is done in a batch
	// (books.go).
	books *later.Queue
}

// New builds a Server.
func New(opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 32 << 20
	}
	if opts.BodyReadTimeout <= 0 {
		opts.BodyReadTimeout = time.Minute
	}
	if opts.UpstreamTimeout <= 0 {
		opts.UpstreamTimeout = 10 * time.Minute
	}
	if opts.Transport == nil {
		opts.Transport = newTransport(opts.UpstreamTimeout)
	}
	if opts.Tracing {
		opts.Transport = tracingTransport{opts.Transport}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	s := &Server{opts: opts, log: opts.Logger, gatherer: opts.Registry, upstreams: upstreams(opts), transport: opts.Transport}
	s.metrics = newMetrics(opts.Registry)
	s.books = s.newBooks()
	if opts.RedisStats != nil {
		registerRedis(opts.Registry, opts.RedisStats)
	}
	if opts.RetrieversInFlight != nil {
		registerInFlight(opts.Registry, opts.RetrieversInFlight)
	}
	s.initKeys()
	s.proxy = s.newReverseProxy()
	s.engine = s.routes()
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.engine.ServeHTTP(w, r)
}

// Drain makes /readyz fail from now on, so that load balancers stop sending
// new requests while the in-flight ones finish.
func (s *Server) Drain() {
	s.draining.Store(true)
}

// newTransport is http.DefaultTransport tuned for a gateway: many idle
// connections to one host, bounded connection set-up, no transparent
// decompression, so that response bytes reach the client exactly as the
// upstream sent them, and request bodies written from where they lie
// (bodyConn).
func newTransport(headerTimeout time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = dialBodyConns((&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 512, 256
	t.ResponseHeaderTimeout = headerTimeout
	t.DisableCompression = true
	return t
}
