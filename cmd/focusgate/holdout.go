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

// newHoldout builds the holdout FOCUSGATE_HOLDOUT asks for: each
// conversation that ends goes to Prometheus, to the dashboard's tally and to
// the log (the lines `focusgate eval --conversations` reads back).
func newHoldout(cfg config.Config, reg prometheus.Registerer, prices *pricing.Table, log *slog.Logger) *split {
	if cfg.Holdout <= 0 {
		return nil
	}
	tally := holdout.NewTally(cfg.Holdout)
	h := holdout.New(holdout.Options{
		Share:   cfg.Holdout,
		Key:     cfg.HoldoutKey,
		Idle:    cfg.HoldoutIdle,
		MaxOpen: cfg.HoldoutMaxOpen,
		Prices:  prices,
		Sinks:   []holdout.Sink{holdout.NewMetrics(reg), tally, holdout.Log{Logger: log}},
	})
	holdout.RegisterOpen(reg, h)
	log.Info("holdout: a share of conversations is sent whole, at full price, for comparison",
		"share", cfg.Holdout, "idle", cfg.HoldoutIdle)
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
	return s.tally
}
