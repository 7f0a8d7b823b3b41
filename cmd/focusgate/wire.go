package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cloudauth"
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
	// pruner prunes with the OpenAI-compatible retriever: the one `prune`
	// uses for a page given alone.
	pruner *prune.Pruner
	prices *pricing.Table
	// signers are the gateway's credentials for each provider, by name
	// (nil: none); the gateway's upstream calls and the retrievers share
	// them.
	signers map[string]focusgate.Signer
	// gate bounds the retriever calls in flight across the gateway.
	gate *prune.Gate
	// memory bounds the request bytes decoded and inspected at once; the
	// gateway's decoding shares it with the pipeline.
	memory *budget.Bytes
	// redis is set when the cache lives in Redis, for readiness and metrics.
	redis *cache.Redis
}

// newPruning builds the cache store, the signers, the retrievers, the
// pruners and the pipeline.
//
// open says that anyone who can reach the gateway may use it without a
// gateway key (config.Config.Open): it then uses no cloud credential of its
// environment, which it would spend for everyone. The command-line tools are
// their user's own client and are never open.
func newPruning(cfg config.Config, getenv func(string) string, open bool, log *slog.Logger) (*pruning, error) {
	prices, err := loadPrices(cfg)
	if err != nil {
		return nil, err
	}
	windows, err := loadWindows(cfg)
	if err != nil {
		return nil, err
	}
	p := &pruning{prices: prices, memory: budget.New(cfg.InspectBudget), gate: prune.NewGate(cfg.RetrieverConcurrency),
		signers: newSigners(cfg, getenv, open, log)}
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
	// Each provider's requests of each API are pruned by the retriever
	// RetrieverFor names, called on its provider with the gateway's
	// credential there, else the client's own when the client speaks to
	// that provider (never another provider's client's). Requests whose
	// retrievers are the same share one pruner.
	type shared struct {
		provider, url, model, path string
		signed                     bool
	}
	pruners := map[shared]*prune.Pruner{}
	retrievals := map[pipeline.RetrievalKey]pipeline.Retrieval{}
	for _, prov := range focusgate.Providers {
		for _, api := range apisOf(prov) {
			r := cfg.RetrieverFor(prov, api)
			signer := p.retrieverSigner(cfg, r)
			k := shared{r.Provider.Name, r.URL, r.Model, r.Spec.Path, signer != nil}
			pr, ok := pruners[k]
			if !ok {
				retriever, err := newRetriever(cfg, r, signer)
				if err != nil {
					return nil, err
				}
				pr = prune.New(prune.Config{
					RetrieverModel:   r.Model,
					MinTokens:        cfg.MinTokens,
					UseHistory:       cfg.RetrieverHistory,
					Counter:          counter,
					PageKeyMemoBytes: int(cfg.PageMemoBytes / 8),
					AppliedMemoBytes: int(cfg.PageMemoBytes / 8),
					Logger:           log,
					Gate:             p.gate,
				}, retriever, selections)
				pruners[k] = pr
			}
			retrievals[pipeline.RetrievalKey{Provider: prov.Name, API: api}] = pipeline.Retrieval{Pruner: pr, RetrieverModel: r.Model, ClientKey: r.ClientKey}
			if prov == focusgate.DefaultProvider && api == focusgate.APIChat {
				p.pruner = pr
			}
		}
	}
	chat := retrievals[pipeline.RetrievalKey{Provider: focusgate.DefaultProvider.Name, API: focusgate.APIChat}]
	p.pipeline = pipeline.New(pipeline.Options{
		Pruner:            chat.Pruner,
		RetrieverModel:    chat.RetrieverModel,
		Retrievals:        retrievals,
		MaxCalls:          cfg.RetrieverMaxCalls,
		Finder:            detect.NewFinder(int(cfg.PageMemoBytes / 2)),
		Mode:              cfg.Mode,
		Variant:           cfg.Prompt,
		PruneAll:          cfg.PruneAll,
		BypassModels:      cfg.BypassPatterns(),
		Budget:            cfg.RetrieverTimeout,
		Memory:            p.memory,
		Prices:            prices,
		Windows:           windows,
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

// apisOf lists the APIs of a provider's routes, each once.
func apisOf(p *focusgate.Provider) []focusgate.API {
	var apis []focusgate.API
	for _, rt := range p.Routes {
		if !slices.Contains(apis, rt.API) {
			apis = append(apis, rt.API)
		}
	}
	return apis
}

// newSigners builds the gateway's credential for each provider: its static
// key, else the cloud credentials of the gateway's environment. An open
// gateway uses no cloud credential: it would sign for everyone who reaches
// it. A configured key there refuses start-up (config's open-relay check).
func newSigners(cfg config.Config, getenv func(string) string, open bool, log *slog.Logger) map[string]focusgate.Signer {
	signers := map[string]focusgate.Signer{}
	for _, p := range focusgate.Providers {
		key := cfg.Upstream(p).Key
		if key == "" && p.Cloud != focusgate.CloudNone && open {
			log.Warn("the cloud credentials of the gateway's environment are not used: anyone who can reach the gateway would be signed for; "+
				"set FOCUSGATE_CLIENT_KEYS_FILE, listen on loopback, or set FOCUSGATE_ALLOW_UNAUTHENTICATED=true behind an authenticating proxy. "+
				"Until then the client's own credentials go through", "provider", p.Name, "addr", cfg.Addr)
			continue
		}
		if s := cloudauth.For(p, key, cloudauth.Options{Getenv: getenv, Logger: log}); s != nil {
			signers[p.Name] = s
		}
	}
	return signers
}

// retrieverSigner is the credential a retriever is called with: its own key
// (FOCUSGATE_RETRIEVER_API_KEY), else its provider's credential, the same
// signer its upstream calls use. Nil: the client's own.
func (p *pruning) retrieverSigner(cfg config.Config, r config.Retriever) focusgate.Signer {
	if r.Key != "" && r.Key != cfg.Upstream(r.Provider).Key {
		return cloudauth.Key(r.Provider.Credentials[0], r.Key)
	}
	return p.signers[r.Provider.Name]
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
// variable in each error: both are reported when both are wrong.
func overridden[T any](table T, override func(T, []byte) (T, error), name, file, inline string) (T, error) {
	var errs []error
	if file != "" {
		data, err := readTable(file)
		if err == nil {
			var next T
			if next, err = override(table, data); err == nil {
				table = next
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%s_FILE: %s: %w", config.Prefix, name, file, err))
		}
	}
	if inline != "" {
		next, err := override(table, []byte(inline))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%s: %w", config.Prefix, name, err))
		} else {
			table = next
		}
	}
	if len(errs) > 0 {
		var zero T
		return zero, errors.Join(errs...)
	}
	return table, nil
}

// maxTableBytes caps a file of prices or context windows.
const maxTableBytes = 4 << 20

// readTable reads a file of prices or context windows, saying what is wrong
// in words: it is missing, unreadable, or too large.
func readTable(name string) ([]byte, error) {
	f, err := os.Open(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("no such file")
	case errors.Is(err, fs.ErrPermission):
		return nil, errors.New("not readable by the gateway")
	case err != nil:
		return nil, errors.New("cannot be opened")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTableBytes+1))
	if err != nil {
		return nil, errors.New("cannot be read")
	}
	if len(data) > maxTableBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxTableBytes)
	}
	return data, nil
}

// logEconomics says at start-up which action models pruning can pay for
// with each retriever: the retriever reads the whole observation, so pruning
// saves money only when it removes a larger share than the price ratio of
// the two models. Each provider's requests are judged by their own
// retriever (Claude Haiku for Claude, a Gemini model for Gemini), so each
// retriever is weighed against the models whose requests it prunes.
func logEconomics(log *slog.Logger, cfg config.Config, prices *pricing.Table) {
	type judged struct {
		providers []string
		models    map[string]bool
	}
	var order []string
	byRetriever := map[string]*judged{}
	for _, p := range focusgate.Providers {
		for _, spec := range p.Retrievers {
			retriever := cfg.RetrieverFor(p, spec.API).Model
			j := byRetriever[retriever]
			if j == nil {
				j = &judged{models: map[string]bool{}}
				byRetriever[retriever] = j
				order = append(order, retriever)
			}
			if !slices.Contains(j.providers, p.Name) {
				j.providers = append(j.providers, p.Name)
			}
			for _, m := range prunedModels(p, spec.API, prices) {
				j.models[m] = true
			}
		}
	}
	thresholds := []any{"expected_reduction", cfg.ExpectedReduction}
	var uneconomic []any
	for _, retriever := range order {
		r, ok := prices.Lookup(retriever)
		if !ok {
			log.Info("the retriever model has no known price: savings are reported in tokens only (set FOCUSGATE_PRICES)",
				"retriever", retriever, "providers", strings.Join(byRetriever[retriever].providers, ","))
			continue
		}
		threshold := r.Input / cfg.ExpectedReduction
		thresholds = append(thresholds, retriever, threshold)
		var losing []string
		for m := range byRetriever[retriever].models {
			if a, _ := prices.Lookup(m); a.Input > 0 && a.Input <= threshold {
				losing = append(losing, m)
			}
		}
		if len(losing) > 0 {
			slices.Sort(losing)
			uneconomic = append(uneconomic, retriever, strings.Join(losing, ","))
		}
	}
	log.Info("pruning pays for action models whose input costs more than their retriever's threshold, in USD per million tokens", thresholds...)
	if len(uneconomic) == 0 {
		return
	}
	what := "their requests are forwarded unpruned (X-Focusgate-Status: skipped; reason=uneconomic), except with the defender prompt"
	if !cfg.SkipUneconomic {
		what = "they are pruned anyway (FOCUSGATE_SKIP_UNECONOMIC=false)"
	}
	log.Warn("with its retriever, pruning costs more than it saves for each action model named after the retriever; "+what, uneconomic...)
}

// prunedModels are the priced models whose requests of api on p's routes
// p's retriever for api judges: Claude's on a Messages route, Gemini's on a
// Gemini route, any but Gemini's on Bedrock's Converse, and any other on
// the rest. An OpenAI-compatible upstream may serve any model the price
// table names (through LiteLLM or OpenRouter), so the default provider's
// are all of them, FOCUSGATE_PRICES's included.
func prunedModels(p *focusgate.Provider, api focusgate.API, prices *pricing.Table) []string {
	names := slices.Collect(maps.Keys(p.Prices))
	if p == focusgate.DefaultProvider {
		return prices.Models()
	}
	var out []string
	for _, m := range names {
		f := focusgate.FamilyOf(m)
		var ok bool
		switch api {
		case focusgate.APIMessages:
			ok = f == focusgate.FamilyClaude
		case focusgate.APIGemini:
			ok = f == focusgate.FamilyGemini
		case focusgate.APIConverse:
			ok = f != focusgate.FamilyGemini
		default:
			ok = f != focusgate.FamilyClaude && f != focusgate.FamilyGemini
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// newRetriever is the retriever r describes, called with signer (nil: the
// client's own credential).
func newRetriever(cfg config.Config, r config.Retriever, signer focusgate.Signer) (prune.Retriever, error) {
	rc := prune.RetrieverConfig{
		Speaks:     r.Spec.Speaks,
		BaseURL:    r.URL,
		Path:       r.Spec.Path,
		Version:    r.Spec.Version,
		Model:      r.Model,
		Signer:     signer,
		Timeout:    cfg.RetrieverTimeout,
		MaxTokens:  cfg.MaxAnswerTokens,
		HTTPClient: &http.Client{Transport: retrieverTransport()},
	}
	if strings.Contains(r.URL, "{") {
		rc.Resolve = r.Provider.Resolve
	}
	retriever, err := prune.NewRetriever(rc)
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
