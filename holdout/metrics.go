package holdout

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics exports each conversation that ended to Prometheus, by arm: a
// counter, and histograms of its steps, input tokens and dollars, from which
// a team can chart the comparison itself. It is a Sink.
type Metrics struct {
	conversations *prometheus.CounterVec
	steps         *prometheus.HistogramVec
	tokens        *prometheus.HistogramVec
	usd           *prometheus.HistogramVec
	errors        *prometheus.CounterVec
	repeats       *prometheus.CounterVec
}

// NewMetrics registers the holdout's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		conversations: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_conversations_total",
			Help: "Conversations that ended (went quiet for FOCUSGATE_HOLDOUT_IDLE), by arm: pruned, or holdout (sent whole, FOCUSGATE_HOLDOUT).",
		}, []string{"arm"}),
		steps: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "focusgate_conversation_steps",
			Help:    "Model calls per conversation that ended, by arm.",
			Buckets: []float64{1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233},
		}, []string{"arm"}),
		tokens: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "focusgate_conversation_input_tokens",
			Help:    "Input tokens of the action model per conversation that ended (as the upstream reported them, cache reads included; else estimated), by arm.",
			Buckets: prometheus.ExponentialBuckets(1000, 2, 14),
		}, []string{"arm"}),
		usd: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "focusgate_conversation_usd",
			Help:    "List-price cost per conversation that ended, action model and retriever, in US dollars, by arm (conversations whose models all have a price).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"arm"}),
		errors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_conversation_upstream_errors_total",
			Help: "Steps of conversations that ended which the upstream answered with an error (400 or above) or not at all, by arm.",
		}, []string{"arm"}),
		repeats: f.NewCounterVec(prometheus.CounterOpts{
			Name: "focusgate_conversation_repeat_steps_total",
			Help: "Steps of conversations that ended whose newest page repeated the page before it, by arm; divided by the steps histogram's sum, the share of steps that repeat a page.",
		}, []string{"arm"}),
	}
}

// End exports one conversation.
func (m *Metrics) End(c Conversation) {
	a := c.Arm.String()
	m.conversations.WithLabelValues(a).Inc()
	m.steps.WithLabelValues(a).Observe(float64(c.Steps))
	m.tokens.WithLabelValues(a).Observe(float64(c.InputTokens))
	if c.Priced {
		m.usd.WithLabelValues(a).Observe(c.USD)
	}
	m.errors.WithLabelValues(a).Add(float64(c.Errors))
	m.repeats.WithLabelValues(a).Add(float64(c.RepeatSteps))
}

// RegisterOpen exposes how many conversations h is following, read when
// scraped: against FOCUSGATE_HOLDOUT_MAX_OPEN, it says whether conversations
// are being ended early for room. With Redis, it also says whether the
// accounting is the team's at the moment, or per replica while Redis is
// unreachable.
func RegisterOpen(reg prometheus.Registerer, h *Holdout) {
	f := promauto.With(reg)
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "focusgate_conversations_open",
		Help: "Conversations being followed for the holdout comparison, not yet ended (at most FOCUSGATE_HOLDOUT_MAX_OPEN): the team's, as Redis last counted them, while the accounting is shared (every replica reports the same: take the max, not the sum); else this replica's.",
	}, func() float64 { return float64(h.Open()) })
	if h.shared != nil {
		f.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "focusgate_conversations_shared",
			Help: "1 while the holdout's accounting is shared by the replicas in Redis (FOCUSGATE_REDIS_URL); 0 while Redis is unreachable and this replica counts the conversations it serves on its own.",
		}, func() float64 {
			if h.Shared() {
				return 1
			}
			return 0
		})
	}
}
