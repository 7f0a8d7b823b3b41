package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/config"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/internal/budget"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/pricing"
	"github.com/focusgate/focusgate/prune"

	"github.com/focusgate/focusgate"
)

// pruning is the pruning side of the gateway, built from the configuration:
// the request pipeline and what it is made of. `serve` and `prune` build it
// the same way, so that `prune --request` prints what the gateway forwards.
type pruning struct {
	pipeline *pipeline.Pipeline
	pruner   *prune.Pruner
	prices   *pricing.Table
	// memory bounds the request bytes decoded and inspected at once; the
	// gateway's decoding shares it with the pipeline.
	memory *budget.Bytes
	// redis is set when the cache lives in Redis, for readiness and metrics.
	redis *cache.Redis
}

// newPruning builds the cache store, the retriever, the pruner and the
// pipeline.
func newPruning(cfg config.Config, log *slog.Logger) (*pruning, error) {
	prices, err := loadPrices(cfg)
	if err != nil {
		return nil, err
	}
	windows, err := loadWindows(cfg)
	if err != nil {
		return nil, err
	}
	p := &pruning{prices: prices, memory: budget.New(cfg.InspectBudget)}
	var store cache.Store
	if cfg.RedisURL == "" {
		store = cache.NewMemory(cfg.CacheMaxBytes, cfg.CacheTTL)
	} else {
		// go-redis logs every failed dial on its own; the cache already
		// counts and logs failures at a bounded rate.
		redis.SetLogger(&logging.VoidLogger{})
		r, err := cache.NewRedis(cache.RedisOptions{URL: cfg.RedisURL, Cluster: cfg.RedisCluster, TTL: cfg.CacheTTL, Timeout: cfg.RedisTimeout, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("%sREDIS_URL: %w", config.Prefix, err)
		}
		store, p.redis = r, r
	}

	// Half of the page memory is detection's (the Finder); the rest holds
	// token counts and the pages' hashes. Every retriever's pruner shares
	// them, and the cache (keys name the retriever model).
	counter := prune.NewCounter(int(cfg.PageMemoBytes / 4))
	selections := cache.New(store, log)
	newPruner := func(r config.Retriever) (*prune.Pruner, error) {
		retriever, err := newRetriever(cfg, r)
		if err != nil {
			return nil, err
		}
		return prune.New(prune.Config{
			RetrieverModel:   r.Model,
			MinTokens:        cfg.MinTokens,
			UseHistory:       cfg.RetrieverHistory,
			Counter:          counter,
			PageKeyMemoBytes: int(cfg.PageMemoBytes / 4),
			Logger:           log,
		}, retriever, selections), nil
	}
	// Each API's requests are pruned by the retriever RetrieverFor names;
	// APIs whose retrievers are the same share one pruner. Whether the
	// client's credential may serve is each API's own (it never goes to
	// another provider's retriever).
	byAPI := map[focusgate.API]pipeline.Retrieval{}
	pruners := map[config.Retriever]*prune.Pruner{}
	for _, api := range focusgate.APIs {
		r := cfg.RetrieverFor(api)
		shared := r
		shared.ClientKey = false
		pr, ok := pruners[shared]
		if !ok {
			if pr, err = newPruner(r); err != nil {
				return nil, err
			}
			pruners[shared] = pr
		}
		byAPI[api] = pipeline.Retrieval{Pruner: pr, RetrieverModel: r.Model, ClientKey: r.ClientKey}
		if api == focusgate.APIChat {
			p.pruner = pr
		}
	}
	p.pipeline = pipeline.New(pipeline.Options{
		Pruner:            p.pruner,
		ByAPI:             byAPI,
		Finder:            detect.NewFinder(int(cfg.PageMemoBytes / 2)),
		Mode:              cfg.Mode,
		Variant:           cfg.Prompt,
		PruneAll:          cfg.PruneAll,
		BypassModels:      cfg.BypassPatterns(),
		Budget:            cfg.RetrieverTimeout,
		Memory:            p.memory,
		Prices:            prices,
		Windows:           windows,
		RetrieverModel:    cfg.RetrieverModel,
		SkipUneconomic:    cfg.SkipUneconomic,
		ExpectedReduction: cfg.ExpectedReduction,
		Logger:            log,
	})

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

// loadPrices builds the price table: the built-in one, then
// FOCUSGATE_PRICES_FILE, then FOCUSGATE_PRICES.
func loadPrices(cfg config.Config) (*pricing.Table, error) {
	return overridden(pricing.Default(), (*pricing.Table).Override, "PRICES", cfg.PricesFile, cfg.Prices)
}

// loadWindows builds the context-window table: the built-in one, then
// FOCUSGATE_CONTEXT_WINDOWS_FILE, then FOCUSGATE_CONTEXT_WINDOWS.
func loadWindows(cfg config.Config) (*pricing.Windows, error) {
	return overridden(pricing.DefaultWindows(), (*pricing.Windows).Override, "CONTEXT_WINDOWS", cfg.ContextWindowsFile, cfg.ContextWindows)
}

// overridden applies to a built-in table the JSON of the file named by the
// variable NAME_FILE, then the JSON of the variable NAME itself, naming the
// variable in any error.
func overridden[T any](table T, override func(T, []byte) (T, error), name, file, inline string) (T, error) {
	var zero T
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return zero, fmt.Errorf("%s%s_FILE: %w", config.Prefix, name, err)
		}
		if table, err = override(table, data); err != nil {
			return zero, fmt.Errorf("%s%s_FILE %s: %w", config.Prefix, name, file, err)
		}
	}
	if inline != "" {
		var err error
		if table, err = override(table, []byte(inline)); err != nil {
			return zero, fmt.Errorf("%s%s: %w", config.Prefix, name, err)
		}
	}
	return table, nil
}

// logEconomics says at start-up which action models pruning can pay for with
// the configured retriever: the retriever reads the whole observation, so
// pruning saves money only when it removes a larger share than the price
// ratio of the two models.
func logEconomics(log *slog.Logger, cfg config.Config, prices *pricing.Table) {
	r, ok := prices.Lookup(cfg.RetrieverModel)
	if !ok {
		log.Info("the retriever model has no known price: savings are reported in tokens only (set FOCUSGATE_PRICES)",
			"retriever", cfg.RetrieverModel)
		return
	}
	threshold := r.Input / cfg.ExpectedReduction
	var losing []string
	for _, m := range prices.Models() {
		if a, _ := prices.Lookup(m); a.Input > 0 && a.Input <= threshold {
			losing = append(losing, m)
		}
	}
	log.Info("pruning pays for action models whose input costs more than the threshold",
		"retriever", cfg.RetrieverModel, "retriever_input_usd_per_mtok", r.Input,
		"expected_reduction", cfg.ExpectedReduction, "threshold_usd_per_mtok", threshold)
	if len(losing) == 0 {
		return
	}
	what := "requests to them are forwarded unpruned (X-Focusgate-Status: skipped; reason=uneconomic), except with the defender prompt"
	if !cfg.SkipUneconomic {
		what = "they are pruned anyway (FOCUSGATE_SKIP_UNECONOMIC=false)"
	}
	log.Warn("with this retriever, pruning costs more than it saves for some action models; "+what,
		"retriever", cfg.RetrieverModel, "models", strings.Join(losing, ","))
}

// newRetriever is the retriever r describes, called with its key (empty:
// each call uses the key its query carries).
func newRetriever(cfg config.Config, r config.Retriever) (prune.Retriever, error) {
	rc := prune.RetrieverConfig{
		BaseURL:    r.URL,
		APIKey:     r.Key,
		Model:      r.Model,
		Timeout:    cfg.RetrieverTimeout,
		MaxTokens:  cfg.MaxAnswerTokens,
		HTTPClient: &http.Client{Transport: retrieverTransport()},
	}
	retriever, err := prune.NewRetriever(r.API, rc)
	if err != nil {
		return nil, fmt.Errorf("%sRETRIEVER_API: %w", config.Prefix, err)
	}
	return retriever, nil
}

// retrieverTransport bounds connection set-up; the whole call is bounded by
// FOCUSGATE_RETRIEVER_TIMEOUT.
func retrieverTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 5 * time.Second
	t.MaxIdleConnsPerHost = 128
	return t
}
