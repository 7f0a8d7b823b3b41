package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/config"
	"github.com/focusgate/focusgate/prune"
)

// tokenMemoBytes bounds the memo of per-line token counts that keeps token
// counting off the hot path for pages seen before.
const tokenMemoBytes = 32 << 20

// pruning is the pruning side of the gateway, built from the configuration.
type pruning struct {
	pruner *prune.Pruner
	// redis is set when the cache lives in Redis, for readiness and metrics.
	redis *cache.Redis
}

// newPruning builds the cache store, the retriever and the pruner.
func newPruning(cfg config.Config, log *slog.Logger) (*pruning, error) {
	p := &pruning{}
	var store cache.Store
	if cfg.RedisURL == "" {
		store = cache.NewMemory(cfg.CacheMaxBytes, cfg.CacheTTL)
	} else {
		// go-redis logs every failed dial on its own; the cache already
		// counts and logs failures at a bounded rate.
		redis.SetLogger(&logging.VoidLogger{})
		r, err := cache.NewRedis(cache.RedisOptions{URL: cfg.RedisURL, TTL: cfg.CacheTTL, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("%sREDIS_URL: %w", config.Prefix, err)
		}
		store, p.redis = r, r
	}

	retriever := prune.NewOpenAIRetriever(prune.RetrieverConfig{
		BaseURL:    cfg.RetrieverBaseURL(),
		APIKey:     cfg.RetrieverKey(),
		Model:      cfg.RetrieverModel,
		Timeout:    cfg.RetrieverTimeout,
		HTTPClient: &http.Client{Transport: retrieverTransport()},
	})
	counter := prune.NewCounter(tokenMemoBytes)
	p.pruner = prune.New(prune.Config{
		RetrieverModel: cfg.RetrieverModel,
		MinTokens:      cfg.MinTokens,
		UseHistory:     cfg.RetrieverHistory,
		Counter:        counter,
		Logger:         log,
	}, retriever, cache.New(store, log))

	// Loading a BPE table takes a few hundred milliseconds; do it now rather
	// than in the first agent's request.
	go func() {
		for _, model := range []string{"gpt-4.1", "gpt-4"} {
			counter.Count(model, "")
		}
	}()
	return p, nil
}

func (p *pruning) Close() error {
	if p.redis != nil {
		return p.redis.Close()
	}
	return nil
}

// retrieverTransport bounds connection set-up; the whole call is bounded by
// FOCUSGATE_RETRIEVER_TIMEOUT.
func retrieverTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
