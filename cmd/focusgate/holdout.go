package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/config"
	"github.com/focusgate/focusgate/holdout"
	"github.com/focusgate/focusgate/pricing"
)

// split is the holdout of a gateway and the tally of its conversations;
// nil when FOCUSGATE_HOLDOUT is 0, where nothing is accounted for.
type split struct {
	*holdout.Holdout
	tally *holdout.Tally
}

// holdoutTimeoutFactor makes the holdout's Redis calls this many times
// longer than the cache's (FOCUSGATE_REDIS_TIMEOUT): no request waits on
// them, and a step whose call times out only because the gateway was short
// of CPU sends the replica back to counting on its own for a while.
const holdoutTimeoutFactor = 10

// newHoldout builds the holdout FOCUSGATE_HOLDOUT asks for: each
// conversation that ends goes to Prometheus, to the dashboard's tally and to
// the log (the lines `focusgate eval --conversations` reads back). With
// FOCUSGATE_REDIS_URL, the replicas keep their accounting in that Redis, so
// that a conversation served by several of them counts once, whole, and
// every dashboard shows the team's comparison.
func newHoldout(cfg config.Config, reg prometheus.Registerer, prices *pricing.Table, log *slog.Logger) *split {
	if cfg.Holdout <= 0 {
		return nil
	}
	tally := holdout.NewTally(cfg.Holdout)
	opts := holdout.Options{
		Share:   cfg.Holdout,
		Key:     cfg.HoldoutKey,
		Idle:    cfg.HoldoutIdle,
		MaxOpen: cfg.HoldoutMaxOpen,
		Prices:  prices,
		Sinks:   []holdout.Sink{holdout.NewMetrics(reg), tally, holdout.Log{Logger: log}},
	}
	scope := "per replica"
	h := holdout.New(opts)
	if cfg.RedisURL != "" {
		shared, err := holdout.NewShared(opts, holdout.RedisOptions{
			URL:     cfg.RedisURL,
			Cluster: cfg.RedisCluster,
			Timeout: holdoutTimeoutFactor * cfg.RedisTimeout,
			Logger:  log,
		})
		if err != nil {
			// The URL was checked with the configuration, and the cache
			// opened it already: this is not expected to happen.
			log.Error("holdout: counting per replica", "err", err)
		} else {
			h, scope = shared, "shared by the replicas in Redis"
		}
	}
	holdout.RegisterOpen(reg, h)
	log.Info("holdout: a share of conversations is sent whole, at full price, for comparison",
		"share", cfg.Holdout, "idle", cfg.HoldoutIdle, "accounting", scope)
	if cfg.HoldoutKey == "" {
		log.Warn("holdout: FOCUSGATE_HOLDOUT_KEY is empty, so arms are drawn with the built-in key, which anyone can read: a client can compute its arm offline and pick it by rewording its first message, which biases the comparison; set a secret key, the same on every replica")
	}
	return &split{Holdout: h, tally: tally}
}

// gateway is the holdout as the gateway takes it: a nil interface when there
// is none.
func (s *split) gateway() focusgate.HoldoutRecorder {
	if s == nil {
		return nil
	}
	return s.Holdout
}

// report is the tally as the dashboard takes it: a nil interface when there
// is none.
func (s *split) report() focusgate.HoldoutReporter {
	if s == nil {
		return nil
	}
	return s.Holdout.Reporter(s.tally)
}
