// Package proxy is focusgate's HTTP face: a transparent reverse proxy for
// OpenAI-compatible APIs that inspects chat-completion and Responses requests,
// has their page observations pruned, splices the result into the original
// bytes and streams the upstream's answer back untouched. Every other request
// passes through as it came.
package proxy

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/pricing"
	"github.com/focusgate/focusgate/prune"
)

// Options configure a Server. Upstream is required; the rest have defaults.
type Options struct {
	// Upstream is the base URL of the action model's API, e.g. https://api.openai.com/v1.
	Upstream *url.URL
	// UpstreamAPIKey is sent as a bearer token when the client sends no
	// Authorization; with Keys, on every request in place of the gateway key.
	UpstreamAPIKey string
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
	// Budget bounds all the work focusgate does on one request's
	// observations (detection, token counting, the cache, the retriever,
	// waiting for another request or replica computing the same selection);
	// past it the original body is forwarded. Default 20s.
	Budget time.Duration
	// InspectBudgetBytes bounds the request bytes under inspection at once;
	// a request that does not fit is forwarded uninspected. Default 64 MiB.
	InspectBudgetBytes int64
	// Transport carries requests upstream; nil builds one from the timeouts above.
	Transport http.RoundTripper
	// Pruner prunes observations; nil forwards every body as it came.
	Pruner Pruner
	// Finder finds the observations of a body and remembers the pages it
	// has seen; nil finds them every time anew.
	Finder *detect.Finder
	// Mode and Variant are the defaults that the X-Focusgate-Mode and
	// X-Focusgate-Prompt request headers override.
	Mode    prune.Mode
	Variant prune.Variant
	// PruneAll prunes every observation of a conversation, not only the newest.
	PruneAll bool
	// Prices estimate each request's savings; nil uses the built-in table.
	// RetrieverModel names the retriever, whose price is the cost side.
	Prices         *pricing.Table
	RetrieverModel string
	// SkipUneconomic skips pruning when the retriever/action input price
	// ratio is at least ExpectedReduction: the retriever would cost more
	// than the pruning saves.
	SkipUneconomic    bool
	ExpectedReduction float64
	// Registry receives the gateway's metrics and is served on /metrics;
	// nil makes one of its own.
	Registry *prometheus.Registry
	// RedisStats, when set, exposes the Redis cache's health as metrics.
	RedisStats func() cache.RedisStats
	// Checks are reported by /readyz. They inform and never make the gateway
	// unready: a gateway whose cache is down still serves.
	Checks map[string]Check
	// Dashboard, when set, is served at /ui and told about every inspected
	// request; nil leaves /ui to the upstream like any other path.
	Dashboard Dashboard
	Logger    *slog.Logger
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

	inspecting byteBudget
	// stopping ends when the server stops pruning for shutdown.
	stopping context.Context
	stop     context.CancelCauseFunc

	prices          *pricing.Table
	retrieverPrice  pricing.Price
	retrieverPriced bool
}

// New builds a Server.
func New(opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 32 << 20
	}
	if opts.BodyReadTimeout <= 0 {
		opts.BodyReadTimeout = time.Minute
	}
	if opts.Budget <= 0 {
		opts.Budget = 20 * time.Second
	}
	if opts.InspectBudgetBytes <= 0 {
		opts.InspectBudgetBytes = 64 << 20
	}
	if opts.UpstreamTimeout <= 0 {
		opts.UpstreamTimeout = 10 * time.Minute
	}
	if opts.Transport == nil {
		opts.Transport = newTransport(opts.UpstreamTimeout)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Prices == nil {
		opts.Prices = pricing.Default()
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	s := &Server{opts: opts, log: opts.Logger, prices: opts.Prices, gatherer: opts.Registry}
	s.inspecting.limit = opts.InspectBudgetBytes
	s.stopping, s.stop = context.WithCancelCause(context.Background())
	s.retrieverPrice, s.retrieverPriced = opts.Prices.Lookup(opts.RetrieverModel)
	s.metrics = newMetrics(opts.Registry)
	if opts.RedisStats != nil {
		registerRedis(opts.Registry, opts.RedisStats)
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
// connections to one host, bounded connection set-up, and no transparent
// decompression, so that response bytes reach the client exactly as the
// upstream sent them.
func newTransport(headerTimeout time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 512, 256
	t.ResponseHeaderTimeout = headerTimeout
	t.DisableCompression = true
	return t
}
