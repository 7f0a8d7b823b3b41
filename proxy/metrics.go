package proxy

import (
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/keys"
)

// metrics are the gateway's Prometheus metrics. Label values are bounded:
// routes are four names, reasons and outcomes come from fixed lists, and
// keys are the names of the configured gateway keys plus anonymous.
type metrics struct {
	keyLabels

	requests         *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	outcomes         *prometheus.CounterVec
	tokensBefore     *prometheus.CounterVec
	tokensAfter      *prometheus.CounterVec
	reduction        prometheus.Histogram
	cacheLookups     *prometheus.CounterVec
	retrieverCalls   *prometheus.CounterVec
	retrieverSeconds prometheus.Histogram
	retrieverTokens  *prometheus.CounterVec
	flaggedLines     prometheus.Counter
	savedUSD         *prometheus.CounterVec
	spentUSD         *prometheus.CounterVec
	netUSD           *prometheus.GaugeVec
	older            *prometheus.CounterVec
	relooks          *prometheus.CounterVec
	prunedPages      *prometheus.CounterVec
	rescues          *prometheus.CounterVec
	limitedPages     prometheus.Counter
	// models bounds the model label: model names come from request bodies.
	models boundedNames
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	m := &metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_requests_total",
			Help: "Requests served, by route (the API of an inspected route: chat, responses, messages, gemini, converse; passthrough; own), provider (openai, anthropic, gemini, bedrock, vertex, azure; empty for own), HTTP status code and gateway key name.",
		}, []string{"route", "provider", "code", "key"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "focusgate_request_duration_seconds",
			Help:    "Time from request to the end of the response (of the stream, for streams), by route and provider.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"route", "provider"}),
		outcomes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_prune_outcomes_total",
			Help: "Inspected requests by outcome: pruned, skipped or failed-open, with the reason (fail-open events are status=\"failed-open\"), by provider and gateway key name.",
		}, []string{"status", "reason", "provider", "key"}),
		tokensBefore: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_observation_tokens_before_total",
			Help: "Observation tokens of the inspected requests before pruning, by gateway key name.",
		}, []string{"key"}),
		tokensAfter: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_observation_tokens_after_total",
			Help: "Observation tokens of the inspected requests after pruning (what the action model read), by gateway key name.",
		}, []string{"key"}),
		reduction: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "focusgate_reduction_ratio",
			Help:    "Share of observation tokens removed, per pruned request.",
			Buckets: []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}, // literals: summed tenths would read 0.30000000000000004
		}),
		cacheLookups: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_cache_lookups_total",
			Help: "Selection look-ups by outcome: hit, miss (this request paid for a retriever call) or shared (another request did).",
		}, []string{"outcome"}),
		retrieverCalls: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_retriever_calls_total",
			Help: "Retriever calls by result: ok, or the fail-open reason.",
		}, []string{"result"}),
		retrieverSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "focusgate_retriever_duration_seconds",
			Help:    "Time spent waiting for a selection that was not cached.",
			Buckets: []float64{.1, .25, .5, 1, 2, 3, 5, 8, 13, 20, 30},
		}),
		retrieverTokens: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_retriever_tokens_total",
			Help: "Tokens the retriever model read (prompt) and wrote (completion).",
		}, []string{"kind"}),
		flaggedLines: f.NewCounter(prometheus.CounterOpts{
			Name: "focusgate_flagged_lines_total",
			Help: "Observation lines removed as prompt injection (defender prompt).",
		}),
		savedUSD: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_action_input_saved_usd_total",
			Help: "Estimated action-model input cost avoided by pruning, in US dollars (models with a known price only), by gateway key name.",
		}, []string{"key"}),
		spentUSD: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_retriever_cost_usd_total",
			Help: "Estimated retriever cost, in US dollars (models with a known price only), by gateway key name.",
		}, []string{"key"}),
		netUSD: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "focusgate_saved_usd",
			Help: "Estimated net savings since start: action-model input saved minus retriever cost, in US dollars, by gateway key name.",
		}, []string{"key"}),
		older: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_older_observations_total",
			Help: "Observations before the newest of a request, by result: reapplied (pruned again with the selection stored when each was the newest), left (forwarded as they came: no selection known, or none that paid), pruned (a new selection, with FOCUSGATE_PRUNE_ALL).",
		}, []string{"result"}),
		relooks: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_relooks_total",
			Help: "Re-looks: requests whose newest page repeated the page the agent had just been shown pruned, sent whole; by page format, action model and gateway key name. Divided by focusgate_pruned_pages_total, the share of pruned pages after which the agent looked again.",
		}, []string{"format", "model", "key"}),
		prunedPages: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_pruned_pages_total",
			Help: "Newest pages of requests sent pruned, by page format, action model and gateway key name: the denominator of the re-look rate.",
		}, []string{"format", "model", "key"}),
		rescues: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_context_rescues_total",
			Help: "Requests that did not fit the action model's context window and were sent with every page pruned, by provider, API and outcome: rescued (the upstream took the pruned request), still-too-long (refused again: the client got the first refusal), nothing-to-prune (no page left to prune: the client got the refusal).",
		}, []string{"provider", "api", "outcome"}),
		limitedPages: f.NewCounter(prometheus.CounterOpts{
			Name: "focusgate_retriever_limited_pages_total",
			Help: "Pages sent whole (or as stubs in a context-window rescue) because their request had made FOCUSGATE_RETRIEVER_MAX_CALLS retriever calls.",
		}),
		models: boundedNames{max: maxModelLabels},
	}
	for _, p := range focusgate.Providers {
		for _, rt := range p.Routes {
			for _, r := range focusgate.Rescues {
				m.rescues.WithLabelValues(p.Name, rt.API.String(), string(r))
			}
		}
	}
	m.keyLabels.vecs = []deleter{m.requests, m.outcomes, m.tokensBefore, m.tokensAfter, m.savedUSD, m.spentUSD, m.netUSD, m.relooks, m.prunedPages}
	return m
}

// registerInFlight exposes how many retriever calls are in flight, read
// when scraped.
func registerInFlight(reg prometheus.Registerer, inFlight func() int64) {
	promauto.With(reg).NewGaugeFunc(prometheus.GaugeOpts{
		Name: "focusgate_retriever_calls_in_flight",
		Help: "Retriever calls in flight across the gateway (at most FOCUSGATE_RETRIEVER_CONCURRENCY; more wait for a place).",
	}, func() float64 { return float64(inFlight()) })
}

// registerRedis exposes the Redis store's health, read when scraped.
func registerRedis(reg prometheus.Registerer, stats func() focusgate.RedisStats) {
	f := promauto.With(reg)
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "focusgate_redis_up",
		Help: "1 while the Redis cache is believed reachable, 0 while it is skipped.",
	}, func() float64 {
		if stats().Up {
			return 1
		}
		return 0
	})
	f.NewCounterFunc(prometheus.CounterOpts{
		Name: "focusgate_redis_skipped_total",
		Help: "Redis calls not made because Redis was known to be down.",
	}, func() float64 { return float64(stats().Skipped) })
	for _, op := range []string{"get", "set", "delete", "lock", "wait", "ping"} {
		f.NewCounterFunc(prometheus.CounterOpts{
			Name:        "focusgate_redis_errors_total",
			Help:        "Failed Redis calls by operation.",
			ConstLabels: prometheus.Labels{"op": op},
		}, func() float64 { return float64(stats().Errors[op]) })
	}
}

// labelledCodes are the statuses the code label names as they are: those
// focusgate answers with itself and those an LLM API commonly does. Any other
// status an upstream returns is labelled by its class ("2xx" ... "5xx"), so
// that an upstream cannot grow the metrics without bound.
var labelledCodes = map[int]string{}

func init() {
	for _, c := range []int{101, 200, 201, 204, 304, 400, 401, 403, 404, 408, 409, 413, 422, 429, 431, 499, 500, 501, 502, 503, 504, 529} {
		labelledCodes[c] = strconv.Itoa(c)
	}
}

func codeLabel(status int) string {
	if l, ok := labelledCodes[status]; ok {
		return l
	}
	if status >= 100 && status < 600 {
		return strconv.Itoa(status/100) + "xx"
	}
	return "other"
}

// routeLabel names the route a request took: the API of an inspected
// route (from the providers' declarations), "passthrough" for any other
// proxied request, "own" for the gateway's own endpoints.
func routeLabel(c *gin.Context) string {
	if c.FullPath() != "" {
		return "own"
	}
	if r := infoFrom(c.Request.Context()).match.Route; r != nil {
		return r.API.String()
	}
	return "passthrough"
}

// requestLabels are the labels a request is counted under, read from its
// context while the handler still has it.
type requestLabels struct{ route, provider, code, key string }

func labelsOf(c *gin.Context) requestLabels {
	l := requestLabels{route: routeLabel(c), code: codeLabel(answered(c)), key: keyName(c.Request.Context())}
	if p := infoFrom(c.Request.Context()).match.Provider; p != nil && l.route != "own" {
		l.provider = p.Name
	}
	return l
}

func (m *metrics) observeRequest(l requestLabels, seconds float64) {
	m.requests.WithLabelValues(l.route, l.provider, l.code, m.keyLabel(l.key)).Inc()
	m.duration.WithLabelValues(l.route, l.provider).Observe(seconds)
}

// observeOutcome records what pruning did to one inspected request and to
// each of its observations, under the name of the gateway key it came with.
func (m *metrics) observeOutcome(keyName string, o focusgate.Outcome) {
	if o.Status == "" {
		return
	}
	key := m.keyLabel(keyName)
	m.outcomes.WithLabelValues(string(o.Status), string(o.Reason), o.Provider, key).Inc()
	if o.Status == focusgate.StatusPruned && o.TokensBefore > 0 {
		m.reduction.Observe(1 - float64(o.TokensAfter)/float64(o.TokensBefore))
	}
	for _, r := range o.Pages {
		m.tokensBefore.WithLabelValues(key).Add(float64(r.TokensBefore))
		m.tokensAfter.WithLabelValues(key).Add(float64(r.TokensAfter))
		m.flaggedLines.Add(float64(r.Flagged))
		if r.Reason == focusgate.ReasonRetrieverLimit {
			m.limitedPages.Inc()
		}
		if r.Cache == "" {
			continue
		}
		m.cacheLookups.WithLabelValues(string(r.Cache)).Inc()
		if r.Cache == focusgate.CacheMiss {
			result := "ok"
			if r.Status == focusgate.StatusFailedOpen || r.Status == focusgate.StatusPruned && r.Reason != "" { // a page stubbed by a rescue keeps its reason
				result = string(r.Reason)
			}
			m.retrieverCalls.WithLabelValues(result).Inc()
			m.retrieverSeconds.Observe(r.Retriever.Seconds())
			m.retrieverTokens.WithLabelValues("prompt").Add(float64(r.Usage.PromptTokens))
			m.retrieverTokens.WithLabelValues("completion").Add(float64(r.Usage.CompletionTokens))
		}
	}
	if n := len(o.Pages); n > 0 {
		newest := o.Pages[n-1]
		format, model := newest.Format, m.models.label(focusgate.ClientName(focusgate.BaseModel(o.Model)))
		switch {
		case o.Relook:
			m.relooks.WithLabelValues(format, model, key).Inc()
		case newest.Status == focusgate.StatusPruned:
			m.prunedPages.WithLabelValues(format, model, key).Inc()
		}
	}
	if o.Rescue != "" {
		m.rescues.WithLabelValues(o.Provider, o.API.String(), string(o.Rescue)).Inc()
	}
	m.older.WithLabelValues("reapplied").Add(float64(o.Older.Reapplied))
	m.older.WithLabelValues("left").Add(float64(o.Older.Left))
	m.older.WithLabelValues("pruned").Add(float64(o.Older.Pruned))
	if o.Priced {
		m.savedUSD.WithLabelValues(key).Add(o.SavedUSD)
		m.spentUSD.WithLabelValues(key).Add(o.RetrieverUSD)
		m.netUSD.WithLabelValues(key).Add(o.SavedUSD - o.RetrieverUSD)
	}
}

func (s *Server) serveMetrics() gin.HandlerFunc {
	h := promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{})
	return func(c *gin.Context) {
		s.Flush()
		h.ServeHTTP(c.Writer, c.Request)
	}
}

// maxModelLabels bounds the distinct values of the model label.
const maxModelLabels = 64

// boundedNames hands out label values for names that come from clients: the
// first max distinct names as they are, every later one as "other", so that a
// client cannot grow the metrics without bound by inventing names.
type boundedNames struct {
	max int

	mu   sync.Mutex
	seen map[string]bool
}

func (b *boundedNames) label(name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen[name] {
		return name
	}
	if len(b.seen) >= b.max {
		return "other"
	}
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	b.seen[name] = true
	return name
}

// deleter is the part of a metric vector that forgets series.
type deleter interface {
	DeletePartialMatch(labels prometheus.Labels) int
}

// keyLabels keeps the "key" label of the metrics bounded: only the names of
// the gateway keys configured now, plus anonymous. Nil names means no keys
// file, where every request is anonymous.
type keyLabels struct {
	vecs []deleter

	mu    sync.RWMutex
	names map[string]bool
}

func (k *keyLabels) keyLabel(name string) string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.names[name] {
		return name
	}
	return keys.Anonymous
}

// setKeyNames replaces the configured names and deletes the series of the
// names no longer configured.
func (k *keyLabels) setKeyNames(names []string) {
	next := make(map[string]bool, len(names))
	for _, n := range names {
		next[n] = true
	}
	k.mu.Lock()
	prev := k.names
	k.names = next
	k.mu.Unlock()
	for n := range prev {
		if next[n] {
			continue
		}
		for _, v := range k.vecs {
			v.DeletePartialMatch(prometheus.Labels{"key": n})
		}
	}
}
